/* membw: streaming-read memory bandwidth, the roofline for decode (bench/run.py).
 * T threads each sum their own contiguous slice of one buffer far larger than the
 * last-level cache; the best of several passes (GB/s = 1e9 bytes/s) is what the
 * machine can stream. Usage: membw [THREADS=2] [MIB=1024] [PASSES=7]; prints one JSON line.
 * Build: cc -O2 -pthread bench/membw.c -o membw */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct {
  const uint64_t* p;
  size_t n; /* uint64 words */
  uint64_t sum;
} Slice;

static pthread_barrier_t start_barrier;

static void* ReadSlice(void* arg) {
  Slice* s = (Slice*)arg;
  pthread_barrier_wait(&start_barrier);
  /* Eight independent accumulators keep the loads in flight; the sum defeats dead-code
   * elimination. */
  uint64_t a0 = 0, a1 = 0, a2 = 0, a3 = 0, a4 = 0, a5 = 0, a6 = 0, a7 = 0;
  const uint64_t* p = s->p;
  size_t i = 0;
  for (; i + 8 <= s->n; i += 8) {
    a0 += p[i];
    a1 += p[i + 1];
    a2 += p[i + 2];
    a3 += p[i + 3];
    a4 += p[i + 4];
    a5 += p[i + 5];
    a6 += p[i + 6];
    a7 += p[i + 7];
  }
  for (; i < s->n; ++i) a0 += p[i];
  s->sum = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7;
  return NULL;
}

static double Now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

static int CompareDouble(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

int main(int argc, char** argv) {
  const int threads = argc > 1 ? atoi(argv[1]) : 2;
  const size_t mib = argc > 2 ? (size_t)atol(argv[2]) : 1024;
  const int passes = argc > 3 ? atoi(argv[3]) : 7;
  if (threads < 1 || threads > 1024 || mib < 1 || passes < 1 || passes > 1000) {
    fprintf(stderr, "usage: membw [THREADS>=1] [MIB>=1] [PASSES>=1]\n");
    return 2;
  }
  const size_t bytes = mib << 20;
  const size_t words = bytes / sizeof(uint64_t);
  uint64_t* buf = NULL;
  if (posix_memalign((void**)&buf, 4096, bytes) != 0) {
    fprintf(stderr, "membw: cannot allocate %zu MiB\n", mib);
    return 1;
  }
  for (size_t i = 0; i < words; ++i) buf[i] = i; /* touch every page: no faults while timing */

  pthread_t* tid = calloc((size_t)threads, sizeof(pthread_t));
  Slice* slices = calloc((size_t)threads, sizeof(Slice));
  double* gbps = calloc((size_t)passes, sizeof(double));
  uint64_t check = 0;
  for (int pass = 0; pass < passes; ++pass) {
    pthread_barrier_init(&start_barrier, NULL, (unsigned)threads + 1);
    for (int t = 0; t < threads; ++t) {
      const size_t begin = words * (size_t)t / (size_t)threads;
      const size_t end = words * (size_t)(t + 1) / (size_t)threads;
      slices[t].p = buf + begin;
      slices[t].n = end - begin;
      pthread_create(&tid[t], NULL, ReadSlice, &slices[t]);
    }
    const double t0 = Now();
    pthread_barrier_wait(&start_barrier);
    for (int t = 0; t < threads; ++t) {
      pthread_join(tid[t], NULL);
      check += slices[t].sum;
    }
    const double dt = Now() - t0;
    pthread_barrier_destroy(&start_barrier);
    gbps[pass] = (double)bytes / dt / 1e9;
  }
  double sorted[1000];
  memcpy(sorted, gbps, sizeof(double) * (size_t)passes);
  qsort(sorted, (size_t)passes, sizeof(double), CompareDouble);
  printf(
      "{\"threads\": %d, \"mib\": %zu, \"passes\": %d, \"gbps_best\": %.3f, "
      "\"gbps_median\": %.3f, \"gbps\": [",
      threads, mib, passes, sorted[passes - 1], sorted[passes / 2]);
  for (int p = 0; p < passes; ++p) printf("%s%.3f", p ? ", " : "", gbps[p]);
  printf("], \"checksum\": %llu}\n", (unsigned long long)(check & 0xffff));
  free(gbps);
  free(slices);
  free(tid);
  free(buf);
  return 0;
}
