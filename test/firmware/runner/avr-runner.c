/*
 * avr-runner: the blockkit node firmware on a simulated ATmega328P (simavr) for the firmware tests.
 *
 *   avr-runner --elf FILE --pty PATH [--a0 MV] [--reset-on-open] [--boot-ms MS]
 *
 * UART0 is joined to a pseudo-terminal whose slave is linked at PATH: open it like a serial port
 * (9600 8N1). Bytes reach the MCU at the pace of 9600 baud; what the MCU sends while nobody has the
 * port open is lost, as on a real board. Simulated time follows the wall clock. With
 * --reset-on-open, opening the port resets the MCU (an Arduino's DTR does) and holds it in reset
 * for --boot-ms (the bootloader's wait, bytes sent meanwhile are lost).
 *
 * Control channel, one command per line on stdin, one answer line on stdout:
 *   a0 MV          set A0 to MV millivolts                         -> ok
 *   d2 L[,MS,L...] drive D2: L is 0 (low: the button pressed), 1 or float (not driven, the
 *                  pull-up decides); with MS simulated ms between levels (bounces)  -> ok
 *   state          -> state ms=SIMULATED_MS d7=0|1 d13=0|1 d9=PWM d10=PWM d11=PWM
 *                     wdt=off|TIMEOUT_MS boots=N rx=BYTES_IN tx=BYTES_OUT queued=BYTES_WAITING
 *   reset          reset the MCU                                    -> ok
 *   hang ADDR      jump to flash byte address ADDR (a `cli; rjmp .` makes a hung firmware) -> ok
 *   advance MS     run MS simulated milliseconds as fast as possible -> ok
 *   quit           exit                                             -> ok
 * Events, at any time: "event ready PATH", "event boot N", "event open", "event close",
 * "event halted STATE". Anything else on stdout is a bug; simavr's own messages go to stderr.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "avr_adc.h"
#include "avr_ioport.h"
#include "avr_uart.h"
#include "sim_avr.h"
#include "sim_elf.h"

#define FREQ 16000000ULL
#define BAUD 9600ULL
#define CYCLES_PER_BYTE (FREQ * 10 / BAUD) /* start + 8 data + stop bits */
#define IN_CAP 4096
#define OUT_CAP 65536

/* ATmega328P data addresses */
#define R_PIND 0x29
#define R_DDRD 0x2A
#define R_PORTD 0x2B
#define R_DDRB 0x24
#define R_PORTB 0x25
#define R_TCCR1A 0x80
#define R_OCR1AL 0x88
#define R_OCR1BL 0x8A
#define R_TCCR2A 0xB0
#define R_OCR2A 0xB3
#define R_WDTCSR 0x60

static avr_t *avr;
static FILE *ctl;
static int master = -1;
static const char *link_path;
static int port_open;
static int reset_on_open;
static long boot_ms;
static unsigned boots;
static unsigned long rx_bytes, tx_bytes; /* bytes into and out of the MCU's UART */
static int at_reset_vector;
static int d2_drive = -1; /* -1: not driven (the pull-up decides), 0 or 1 */
static int xoff;
static avr_irq_t *uart_in;
static avr_irq_t *adc0;
static avr_cycle_count_t next_rx;
static unsigned char inq[IN_CAP];
static size_t in_head, in_len;
static unsigned char outq[OUT_CAP];
static size_t out_head, out_len;
static volatile sig_atomic_t stop_requested;

static void emit(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vfprintf(ctl, fmt, ap);
  va_end(ap);
  fputc('\n', ctl);
  fflush(ctl);
}

static unsigned long long now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (unsigned long long)ts.tv_sec * 1000000000ULL + (unsigned long long)ts.tv_nsec;
}

static void on_uart_out(struct avr_irq_t *irq, uint32_t value, void *param) {
  (void)irq;
  (void)param;
  tx_bytes++;
  if (!port_open) return; /* nobody listening: lost, like on a real board */
  if (out_len == OUT_CAP) return;
  outq[(out_head + out_len) % OUT_CAP] = (unsigned char)value;
  out_len++;
}

static void on_xon(struct avr_irq_t *irq, uint32_t value, void *param) {
  (void)irq;
  (void)value;
  (void)param;
  xoff = 0;
}

static void on_xoff(struct avr_irq_t *irq, uint32_t value, void *param) {
  (void)irq;
  (void)value;
  (void)param;
  xoff = 1;
}

static void avr_sleep_none(avr_t *a, avr_cycle_count_t how_long) {
  (void)a;
  (void)how_long; /* pacing is done by the main loop, not by sleeping inside simavr */
}

static int bit(uint16_t addr, int b) { return (avr->data[addr] >> b) & 1; }

/* An output pin's level: driven only when its DDR bit is set. */
static int out_pin(uint16_t ddr, uint16_t port, int b) { return bit(ddr, b) && bit(port, b); }

/* A PWM pin as analogWrite leaves it: the compare value when the timer drives it, else 0 or 255. */
static int pwm_pin(uint16_t tccr, int com_bit, uint16_t ocr, int portb_bit) {
  if (bit(tccr, com_bit)) return avr->data[ocr];
  return out_pin(R_DDRB, R_PORTB, portb_bit) ? 255 : 0;
}

/* One simulated instruction (or one sleep up to the next timer), with the pins held by the test. */
static void step(void) {
  if (avr->pc == 0) {
    if (!at_reset_vector) {
      at_reset_vector = 1;
      boots++;
      emit("event boot %u", boots);
    }
  } else {
    at_reset_vector = 0;
  }
  /* D2 as the test holds it, else as the MCU drives it (its pull-up when an input). */
  int d2 = d2_drive >= 0 ? d2_drive : bit(R_PORTD, 2);
  avr->data[R_PIND] = (uint8_t)((avr->data[R_PIND] & ~(1 << 2)) | (d2 << 2));
  if (in_len > 0 && !xoff && avr->cycle >= next_rx) {
    unsigned char b = inq[in_head];
    in_head = (in_head + 1) % IN_CAP;
    in_len--;
    next_rx = avr->cycle + CYCLES_PER_BYTE;
    avr_raise_irq(uart_in, b);
    rx_bytes++;
  }
  avr_run(avr);
}

/* The watchdog's timeout when it resets the MCU (WDE), from its prescaler bits. */
static void watchdog(char *out, size_t cap) {
  uint8_t w = avr->data[R_WDTCSR];
  if (!(w & (1 << 3))) {
    snprintf(out, cap, "off");
    return;
  }
  unsigned wdp = (unsigned)((w & 7) | ((w >> 2) & 8));
  snprintf(out, cap, "%u", 16u << wdp);
}

static int halted(void) { return avr->state == cpu_Done || avr->state == cpu_Crashed; }

static void run_until(avr_cycle_count_t target) {
  while (avr->cycle < target && !halted()) step();
  if (halted()) {
    static int said;
    if (!said) emit("event halted %d", avr->state);
    said = 1;
  }
}

static int open_pty(const char *path) {
  int m = posix_openpt(O_RDWR | O_NOCTTY | O_NONBLOCK);
  if (m < 0 || grantpt(m) < 0 || unlockpt(m) < 0) return -1;
  const char *slave_name = ptsname(m);
  if (!slave_name) return -1;
  int s = open(slave_name, O_RDWR | O_NOCTTY);
  if (s < 0) return -1;
  struct termios t;
  if (tcgetattr(s, &t) == 0) {
    cfmakeraw(&t);
    cfsetspeed(&t, B9600);
    tcsetattr(s, TCSANOW, &t);
  }
  close(s); /* from now on the master sees POLLHUP while nobody has the slave open */
  unlink(path);
  if (symlink(slave_name, path) < 0) return -1;
  return m;
}

/* Whether somebody has the port open now: the master polls POLLHUP while the slave is closed. */
static int slave_open(void) {
  struct pollfd p = {.fd = master, .events = POLLIN};
  if (poll(&p, 1, 0) < 0) return port_open;
  return !(p.revents & POLLHUP);
}

static void flush_out(void) {
  while (out_len > 0 && port_open) {
    size_t n = out_len;
    if (out_head + n > OUT_CAP) n = OUT_CAP - out_head;
    ssize_t w = write(master, outq + out_head, n);
    if (w <= 0) return;
    out_head = (out_head + (size_t)w) % OUT_CAP;
    out_len -= (size_t)w;
  }
}

static void read_in(int keep) {
  unsigned char buf[512];
  size_t room = IN_CAP - in_len;
  if (room == 0) return;
  ssize_t r = read(master, buf, room < sizeof buf ? room : sizeof buf);
  if (r <= 0 || !keep) return;
  for (ssize_t k = 0; k < r; k++) inq[(in_head + in_len++) % IN_CAP] = buf[k];
}

static avr_cycle_count_t anchor_cycle;
static unsigned long long anchor_ns;
static unsigned long long hold_until_ns;

static void reanchor(void) {
  anchor_cycle = avr->cycle;
  anchor_ns = now_ns();
}

static void do_reset(void) {
  avr_reset(avr);
  xoff = 0;
  at_reset_vector = 0;
}

static void command(char *line) {
  char *arg = strchr(line, ' ');
  if (arg) *arg++ = '\0';
  if (!strcmp(line, "a0") && arg) {
    avr_raise_irq(adc0, (uint32_t)strtoul(arg, NULL, 10));
    emit("ok");
  } else if (!strcmp(line, "d2") && arg) {
    int k = 0;
    for (char *tok = strtok(arg, ","); tok; tok = strtok(NULL, ","), k++) {
      if (k % 2 == 0) d2_drive = !strcmp(tok, "float") ? -1 : atoi(tok) ? 1 : 0;
      else run_until(avr->cycle + (avr_cycle_count_t)strtoull(tok, NULL, 10) * (FREQ / 1000));
    }
    reanchor();
    emit("ok");
  } else if (!strcmp(line, "state")) {
    char wdt[16];
    watchdog(wdt, sizeof wdt);
    emit("state ms=%llu d7=%d d13=%d d9=%d d10=%d d11=%d wdt=%s boots=%u rx=%lu tx=%lu queued=%zu", (unsigned long long)(avr->cycle * 1000 / FREQ),
         out_pin(R_DDRD, R_PORTD, 7), out_pin(R_DDRB, R_PORTB, 5), pwm_pin(R_TCCR1A, 7, R_OCR1AL, 1),
         pwm_pin(R_TCCR1A, 5, R_OCR1BL, 2), pwm_pin(R_TCCR2A, 7, R_OCR2A, 3), wdt, boots, rx_bytes, tx_bytes, in_len);
  } else if (!strcmp(line, "reset")) {
    do_reset();
    emit("ok");
  } else if (!strcmp(line, "hang") && arg) {
    avr->pc = (avr_flashaddr_t)strtoul(arg, NULL, 0);
    emit("ok");
  } else if (!strcmp(line, "advance") && arg) {
    run_until(avr->cycle + (avr_cycle_count_t)strtoull(arg, NULL, 10) * (FREQ / 1000));
    reanchor();
    emit("ok");
  } else if (!strcmp(line, "quit")) {
    emit("ok");
    stop_requested = 1;
  } else {
    emit("error unknown command: %s", line);
  }
}

static void on_signal(int sig) {
  (void)sig;
  stop_requested = 1;
}

int main(int argc, char **argv) {
  const char *elf = NULL;
  unsigned long a0 = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--elf") && i + 1 < argc) elf = argv[++i];
    else if (!strcmp(argv[i], "--pty") && i + 1 < argc) link_path = argv[++i];
    else if (!strcmp(argv[i], "--a0") && i + 1 < argc) a0 = strtoul(argv[++i], NULL, 10);
    else if (!strcmp(argv[i], "--boot-ms") && i + 1 < argc) boot_ms = strtol(argv[++i], NULL, 10);
    else if (!strcmp(argv[i], "--reset-on-open")) reset_on_open = 1;
    else {
      fprintf(stderr, "usage: avr-runner --elf FILE --pty PATH [--a0 MV] [--reset-on-open] [--boot-ms MS]\n");
      return 2;
    }
  }
  if (!elf || !link_path) {
    fprintf(stderr, "avr-runner: --elf and --pty are required\n");
    return 2;
  }
  /* The control channel keeps stdout; simavr prints to stdout too, so stdout becomes stderr. */
  ctl = fdopen(dup(1), "w");
  dup2(2, 1);
  signal(SIGTERM, on_signal);
  signal(SIGINT, on_signal);
  signal(SIGPIPE, SIG_IGN);

  elf_firmware_t f;
  memset(&f, 0, sizeof f);
  if (elf_read_firmware(elf, &f) != 0) {
    fprintf(stderr, "avr-runner: cannot read %s\n", elf);
    return 1;
  }
  strcpy(f.mmcu, "atmega328p");
  f.frequency = FREQ;
  f.vcc = f.avcc = f.aref = 5000;
  avr = avr_make_mcu_by_name(f.mmcu);
  if (!avr) return 1;
  avr_init(avr);
  avr->log = LOG_ERROR;
  avr_load_firmware(avr, &f);
  avr->vcc = avr->avcc = avr->aref = 5000;
  avr->sleep = avr_sleep_none;

  uint32_t flags = 0;
  avr_ioctl(avr, AVR_IOCTL_UART_GET_FLAGS('0'), &flags);
  flags &= ~(uint32_t)(AVR_UART_FLAG_STDIO | AVR_UART_FLAG_POLL_SLEEP);
  avr_ioctl(avr, AVR_IOCTL_UART_SET_FLAGS('0'), &flags);
  uart_in = avr_io_getirq(avr, AVR_IOCTL_UART_GETIRQ('0'), UART_IRQ_INPUT);
  avr_irq_register_notify(avr_io_getirq(avr, AVR_IOCTL_UART_GETIRQ('0'), UART_IRQ_OUTPUT), on_uart_out, NULL);
  avr_irq_register_notify(avr_io_getirq(avr, AVR_IOCTL_UART_GETIRQ('0'), UART_IRQ_OUT_XON), on_xon, NULL);
  avr_irq_register_notify(avr_io_getirq(avr, AVR_IOCTL_UART_GETIRQ('0'), UART_IRQ_OUT_XOFF), on_xoff, NULL);
  adc0 = avr_io_getirq(avr, AVR_IOCTL_ADC_GETIRQ, ADC_IRQ_ADC0);
  avr_raise_irq(adc0, (uint32_t)a0);

  master = open_pty(link_path);
  if (master < 0) {
    fprintf(stderr, "avr-runner: cannot make the pseudo-terminal at %s: %s\n", link_path, strerror(errno));
    return 1;
  }
  emit("event ready %s", link_path);

  char cmd[256];
  size_t cmd_len = 0;
  reanchor();
  while (!stop_requested) {
    unsigned long long now = now_ns();
    int open_now = slave_open();
    if (open_now != port_open) {
      port_open = open_now;
      emit(open_now ? "event open" : "event close");
      if (open_now && reset_on_open) {
        do_reset();
        hold_until_ns = now + (unsigned long long)boot_ms * 1000000ULL;
      }
      if (!open_now) in_len = out_len = 0;
    }
    int holding = now < hold_until_ns;
    if (holding) {
      reanchor(); /* held in reset: no simulated time passes */
    } else {
      avr_cycle_count_t target = anchor_cycle + (avr_cycle_count_t)((now - anchor_ns) * FREQ / 1000000000ULL);
      run_until(target);
    }
    flush_out();

    struct pollfd p[2] = {{.fd = 0, .events = POLLIN}, {.fd = master, .events = POLLIN}};
    int nfds = port_open && in_len < IN_CAP ? 2 : 1;
    if (poll(p, (nfds_t)nfds, 1) < 0 && errno != EINTR) break;
    if (nfds == 2 && (p[1].revents & POLLIN)) read_in(!holding); /* the bootloader eats what it gets */
    if (p[0].revents & (POLLIN | POLLHUP)) {
      ssize_t r = read(0, cmd + cmd_len, sizeof cmd - 1 - cmd_len);
      if (r <= 0) break; /* the test went away */
      cmd_len += (size_t)r;
      char *nl;
      while ((nl = memchr(cmd, '\n', cmd_len)) != NULL) {
        *nl = '\0';
        command(cmd);
        size_t used = (size_t)(nl - cmd) + 1;
        memmove(cmd, nl + 1, cmd_len - used);
        cmd_len -= used;
      }
      if (cmd_len == sizeof cmd - 1) cmd_len = 0; /* a command line too long: dropped */
    }
  }
  unlink(link_path);
  return 0;
}
