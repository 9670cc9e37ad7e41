#include "vfs/internal/chunk_pipeline.h"

#include "base/memory.h"

namespace weft {

ChunkPipeline::ChunkPipeline(Store store) : store_(std::move(store)), thread_([this] { Run(); }) {
  ReserveMapped(filling_.bytes, kBatchBytes + (1 << 20));
}

ChunkPipeline::~ChunkPipeline() {
  (void)Drain();
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

Status ChunkPipeline::Add(ByteSpan chunk) {
  {
    std::lock_guard lock(mu_);
    if (!error_.ok()) return error_;
  }
  filling_.bytes.append(AsChars(chunk));
  filling_.sizes.push_back(static_cast<uint32_t>(chunk.size()));
  if (filling_.hashed) filling_.ids.push_back(ChunkId::Of(chunk));
  if (filling_.bytes.size() >= kBatchBytes) Submit();
  return OkStatus();
}

void ChunkPipeline::Submit() {
  if (filling_.sizes.empty()) return;
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return queue_.size() < kMaxQueued; });
  queue_.push_back(std::move(filling_));
  filling_ = Batch();
  if (!spare_.empty()) {
    filling_ = std::move(spare_.back());
    spare_.pop_back();
  }
  // A backlog beyond the batch being stored: the helper is the slower side, so this thread
  // hashes the next batch.
  filling_.hashed = queue_.size() >= 2;
  lock.unlock();
  ReserveMapped(filling_.bytes, kBatchBytes + (1 << 20));  // a new batch unless a spare
  cv_.notify_all();
}

Status ChunkPipeline::Drain() {
  Submit();
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return queue_.empty() && !busy_; });
  return error_;
}

void ChunkPipeline::Run() {
  std::unique_lock lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, and nothing left
    Batch batch = std::move(queue_.front());
    queue_.pop_front();
    busy_ = true;
    const bool failed = !error_.ok();
    lock.unlock();
    cv_.notify_all();  // room in the queue
    Status status;
    if (!failed) {
      size_t at = 0;
      for (size_t i = 0; i < batch.sizes.size(); ++i) {
        const ByteSpan chunk = AsBytes(std::string_view(batch.bytes).substr(at, batch.sizes[i]));
        status = store_(batch.hashed ? batch.ids[i] : ChunkId::Of(chunk), chunk);
        if (!status.ok()) break;
        at += batch.sizes[i];
      }
    }
    batch.bytes.clear();
    batch.sizes.clear();
    batch.ids.clear();
    lock.lock();
    if (!status.ok() && error_.ok()) error_ = status;
    spare_.push_back(std::move(batch));
    busy_ = false;
    cv_.notify_all();
  }
}

}  // namespace weft
