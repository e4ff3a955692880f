#include "frames.h"
#include <avr/sleep.h>

namespace {

/*
 * Serial output that sleeps while the transmit buffer is full (the core's Serial.write spins): the
 * byte-sent interrupt wakes it. Costs nothing on a board, and a simulator need not run every spin.
 */
class SleepyOut : public Print {
 public:
  size_t write(uint8_t b) override {
    for (;;) {
      cli();
      if (Serial.availableForWrite() > 0) break;
      sleep_enable();
      sei();  // the instruction after sei runs before any interrupt: the wake-up cannot be missed
      sleep_cpu();
      sleep_disable();
    }
    sei();
    return Serial.write(b);
  }
  using Print::write;
};

SleepyOut out;

}  // namespace

void writeFrame(FrameKind kind, uint8_t g, uint16_t d, const char *da) {
  if (kind == FRAME_DEVICE) out.print(F("{\"DEVICE\":[{\"G\":\""));
  else if (kind == FRAME_PLUGIN) out.print(F("{\"PLUGIN\":[{\"G\":\""));
  else out.print(F("{\"ACK\":[{\"G\":\""));
  out.print(g);
  out.print(F("\",\"V\":0,\"D\":"));
  out.print(d);
  if (da != NULL) {
    out.print(F(",\"DA\":\""));
    out.print(da);
    out.print('"');
  }
  out.print(F("}]}\r\n"));
}

void writeError(uint8_t code) {
  out.print(F("{\"ERROR\":[{\"CODE\":"));
  out.print(code);
  out.print(F("}]}\r\n"));
}

void writeNewline() {
  out.print(F("\r\n"));
}
