/* record_bench's system-call-heavy program: 20000 small reads and writes
 * (/dev/zero into a buffer, the buffer to /dev/null) with little work in
 * between, about one system call every 30 instructions. */
#include <fcntl.h>
#include <unistd.h>

int main(void) {
  char buf[64];
  int zero = open("/dev/zero", O_RDONLY), null = open("/dev/null", O_WRONLY);
  long sum = 0;
  for (int i = 0; i < 10000; ++i) {
    if (read(zero, buf, sizeof buf) != sizeof buf) return 1;
    buf[i & 63] = (char)i;
    sum += buf[(i * 7) & 63];
    if (write(null, buf, sizeof buf) != sizeof buf) return 1;
  }
  close(zero);
  close(null);
  return (int)(sum & 1);
}
