#include "line_reader.h"

LineEvent LineReader::feed(uint8_t b) {
  if (ready_) {
    ready_ = false;
    len_ = 0;
  }
  if (b == '\n') {
    if (discarding_) {
      discarding_ = false;
      return LINE_NONE;
    }
    ready_ = true;
    return LINE_READY;
  }
  if (b == '\r' || discarding_) return LINE_NONE;
  if (len_ == LINE_MAX) {
    discarding_ = true;
    len_ = 0;
    return LINE_TOO_LONG;
  }
  buf_[len_++] = (char)b;
  return LINE_NONE;
}
