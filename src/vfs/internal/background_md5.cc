#include "vfs/internal/background_md5.h"

namespace weft {

BackgroundMd5::~BackgroundMd5() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void BackgroundMd5::Update(ByteSpan data) {
  bytes_ += data.size();
  if (!thread_.joinable()) {
    if (bytes_ < kThreadFrom) {
      md5_.Update(data);
      return;
    }
    thread_ = std::thread([this] { Run(); });
  }
  std::unique_lock lock(mu_);
  cv_.wait(lock, [this] { return queue_.size() < kMaxQueued; });
  std::string piece;
  if (!spare_.empty()) {
    piece = std::move(spare_.back());
    spare_.pop_back();
  }
  piece.assign(reinterpret_cast<const char*>(data.data()), data.size());
  queue_.push_back(std::move(piece));
  cv_.notify_all();
}

std::array<uint8_t, 16> BackgroundMd5::Finish() {
  {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [this] { return queue_.empty() && !busy_; });
  }
  return md5_.Finish();
}

void BackgroundMd5::Run() {
  std::unique_lock lock(mu_);
  while (true) {
    cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stop requested and nothing left
    std::string piece = std::move(queue_.front());
    queue_.pop_front();
    busy_ = true;
    cv_.notify_all();  // room in the queue
    lock.unlock();
    md5_.Update(AsBytes(piece));
    lock.lock();
    spare_.push_back(std::move(piece));
    busy_ = false;
    cv_.notify_all();
  }
}

}  // namespace weft
