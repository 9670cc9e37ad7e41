#include "vfs/internal/chunk_pipeline.h"

namespace weft {

ChunkPipeline::~ChunkPipeline() {
  if (!worker_.joinable()) return;
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  worker_.join();
}

Status ChunkPipeline::Store(ByteSpan chunk) {
  {
    std::lock_guard lock(mu_);
    if (!error_.ok()) return error_;
  }
  const ChunkId id = ChunkId::Of(chunk);
  refs_.push_back({id, static_cast<uint32_t>(chunk.size())});
  Status s = put_(id, chunk);
  if (!s.ok()) {
    std::lock_guard lock(mu_);
    if (error_.ok()) error_ = s;
  }
  return s;
}

Status ChunkPipeline::Add(ByteSpan chunk) {
  added_bytes_ += chunk.size();
  if (!worker_.joinable()) {
    if (added_bytes_ < kThreadFrom) return Store(chunk);
    worker_ = std::thread([this] { Run(); });
  }
  std::unique_lock lock(mu_);
  cv_.wait(lock, [this] { return queue_.size() < kMaxQueued; });
  if (!error_.ok()) return error_;
  std::string copy;
  if (!spare_.empty()) {
    copy = std::move(spare_.back());
    spare_.pop_back();
  }
  copy.assign(reinterpret_cast<const char*>(chunk.data()), chunk.size());
  queue_.push_back(std::move(copy));
  cv_.notify_all();
  return OkStatus();
}

Status ChunkPipeline::Drain() {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [this] { return queue_.empty() && !busy_; });
  return error_;
}

void ChunkPipeline::Run() {
  std::unique_lock lock(mu_);
  while (true) {
    cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stop requested and nothing left
    std::string chunk = std::move(queue_.front());
    queue_.pop_front();
    busy_ = true;
    cv_.notify_all();  // room in the queue
    lock.unlock();
    (void)Store(AsBytes(chunk));
    lock.lock();
    spare_.push_back(std::move(chunk));
    busy_ = false;
    cv_.notify_all();
  }
}

}  // namespace weft
