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

void BackgroundMd5::Start(ByteSpan data) {
  Wait();
  if (data.size() < kInlineBelow) {
    md5_.Update(data);
    return;
  }
  if (!thread_.joinable()) thread_ = std::thread([this] { Run(); });
  {
    std::lock_guard lock(mu_);
    pending_ = data;
    has_work_ = true;
  }
  cv_.notify_all();
}

void BackgroundMd5::Wait() {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [this] { return !has_work_; });
}

std::array<uint8_t, 16> BackgroundMd5::Finish() {
  Wait();
  return md5_.Finish();
}

void BackgroundMd5::Run() {
  std::unique_lock lock(mu_);
  while (true) {
    cv_.wait(lock, [this] { return has_work_ || stop_; });
    if (!has_work_) return;  // stop requested and nothing left
    ByteSpan data = pending_;
    lock.unlock();
    md5_.Update(data);
    lock.lock();
    has_work_ = false;
    cv_.notify_all();
  }
}

}  // namespace weft
