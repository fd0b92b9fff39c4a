// Before any library starts: an address-space limit (ulimit -v) too small for optimus to start is
// refused in one sentence. OpenBLAS initialises before main and, when it cannot map a buffer,
// retries forever, so without this check such a command hangs without a word. The check sits in
// the executable's .preinit_array, which the dynamic loader runs before the constructors of every
// shared library, OpenBLAS's among them.
#include <fcntl.h>
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>

namespace {

// What optimus needs to start and train a tiny model beyond the address space its libraries already
// take when this check runs, in MiB: a base, and as much again for each OpenBLAS thread past the
// first (docs/README.md, "Robustness", gives the measurements). The libraries' share differs
// between builds: a CUDA build maps cuBLAS, hundreds of MiB of it, before anything runs.
constexpr long kBaseMiB = 384, kPerThreadMiB = 384;

// The address space this process has mapped so far (VmSize of /proc/self/status), in MiB; 0 if it
// cannot be read. Plain system calls: nothing of the C library that needs initialising.
long mapped_mib() {
  char text[4096];
  const int fd = open("/proc/self/status", O_RDONLY);
  if (fd < 0) return 0;
  const ssize_t n = read(fd, text, sizeof text - 1);
  close(fd);
  if (n <= 0) return 0;
  text[n] = '\0';
  const char* line = std::strstr(text, "VmSize:");
  return line == nullptr ? 0 : std::strtol(line + 7, nullptr, 10) >> 10;  // the value is in kB
}

// The value of `name` in the environment `envp`, or null (getenv does not work yet before libc's
// initialisation; the loader passes the environment to this function).
const char* variable(char** envp, const char* name) {
  const size_t n = std::strlen(name);
  for (char** e = envp; e != nullptr && *e != nullptr; ++e) {
    if (std::strncmp(*e, name, n) == 0 && (*e)[n] == '=') return *e + n + 1;
  }
  return nullptr;
}

// The threads OpenBLAS will start: OPENBLAS_NUM_THREADS, else GOTO_NUM_THREADS, else
// OMP_NUM_THREADS, at most the processors this process may run on (OpenBLAS's own rule).
long openblas_threads(char** envp) {
  cpu_set_t cpus;
  const long processors =
      sched_getaffinity(0, sizeof cpus, &cpus) == 0 ? CPU_COUNT(&cpus) : sysconf(_SC_NPROCESSORS_ONLN);
  long threads = 0;
  for (const char* name : {"OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS"}) {
    const char* value = variable(envp, name);
    if (threads <= 0 && value != nullptr) threads = std::atol(value);
  }
  return threads <= 0 || threads > processors ? processors : threads;
}

void refuse_small_address_space(int, char**, char** envp) {
  rlimit limit{};
  if (getrlimit(RLIMIT_AS, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return;
  const long allowed = static_cast<long>(limit.rlim_cur >> 20), threads = openblas_threads(envp);
  const long libraries = mapped_mib(), needed = libraries + kBaseMiB + kPerThreadMiB * (threads - 1);
  if (allowed >= needed) return;
  char line[480];
  const int n = std::snprintf(
      line, sizeof line,
      "error: optimus needs an address space of at least %ld MiB to start with %ld OpenBLAS "
      "thread%s (%ld MiB its libraries take, %ld to run, and %ld more for each thread past the "
      "first), but ulimit -v allows %ld MiB; raise it (ulimit -v %ld) or set OPENBLAS_NUM_THREADS "
      "lower\n",
      needed, threads, threads == 1 ? "" : "s", libraries, kBaseMiB, kPerThreadMiB, allowed, needed * 1024);
  if (write(STDERR_FILENO, line, static_cast<size_t>(n)) < 0) _exit(1);
  _exit(1);
}

}  // namespace

// Run by the dynamic loader before the shared libraries' constructors.
__attribute__((section(".preinit_array"),
               used)) void (*const optimus_address_space_check)(int, char**, char**) = refuse_small_address_space;
