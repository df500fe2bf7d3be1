// Cache-line ping-pong between a thread pinned to cpu0 and one pinned to cpu1: nanoseconds per
// round trip. On the 2-vCPU EPYC VM this project is measured on it reads 80-160 ns while
// onnxruntime's 2-thread probe runs fast and 370-440 ns while it runs slow
// (bench/results/vcpu_pingpong_2026-11-24.txt): the slow 2-thread state is the two vCPUs placed
// far apart (a cache line takes about 4x as long to cross), not a busy or shared core.
//
//   gcc -O2 -pthread -o vcpu_pingpong bench/vcpu_pingpong.c && ./vcpu_pingpong
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>
static _Atomic long flag __attribute__((aligned(64)));
enum { N = 200000 };
static void pin(int c) { cpu_set_t s; CPU_ZERO(&s); CPU_SET(c, &s); pthread_setaffinity_np(pthread_self(), sizeof s, &s); }
static void *other(void *a) { (void)a; pin(1); for (long i = 0; i < N; i++) { while (atomic_load(&flag) != 2 * i + 1); atomic_store(&flag, 2 * i + 2); } return 0; }
int main(void) {
  pthread_t t; pin(0); atomic_store(&flag, 0); pthread_create(&t, 0, other, 0);
  struct timespec a, b; clock_gettime(CLOCK_MONOTONIC, &a);
  for (long i = 0; i < N; i++) { atomic_store(&flag, 2 * i + 1); while (atomic_load(&flag) != 2 * i + 2); }
  clock_gettime(CLOCK_MONOTONIC, &b); pthread_join(t, 0);
  printf("%.0f ns per round trip\n", ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / N);
  return 0;
}
