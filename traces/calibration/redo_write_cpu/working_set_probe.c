/* What an O_DIRECT write costs a thread that works on a working set between its writes
 * (traces/calibration/redo_write_cpu/README.md): each iteration touches 2,000 random cache lines
 * of WS MB, then (second pass) writes 4 KiB in place with O_DIRECT and waits for it; the
 * thread's CPU per iteration, three repeats each. Development evidence, not used by the model.
 *   gcc -O2 -o /tmp/wsprobe working_set_probe.c
 *   taskset -c 1 /tmp/wsprobe FILE WS_MB ITERATIONS      (FILE on the replica's disk; removed)
 * working_set_probe.txt: its output at 0, 1, 8 and 32 MB, 2,000 iterations, under
 * /work/bin/measure on CPU 1 of the 2-core VM. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <fcntl.h>
#include <unistd.h>
#include <time.h>
#include <string.h>
static double tt(clockid_t c){struct timespec t;clock_gettime(c,&t);return t.tv_sec*1e6+t.tv_nsec/1e3;}
int main(int argc,char**argv){
  size_t ws=(size_t)(atof(argv[2])*1024*1024); int n=atoi(argv[3]);
  int fd=open(argv[1],O_RDWR|O_CREAT|O_DIRECT,0600);
  void*buf; posix_memalign(&buf,4096,4096); memset(buf,'x',4096);
  for(int i=0;i<256;i++) pwrite(fd,buf,4096,(off_t)i*4096);
  fsync(fd);
  volatile unsigned char *mem = malloc(ws+64); memset((void*)mem,1,ws+64);
  size_t stride=64; size_t lines=ws/stride; unsigned long seed=1;
  for(int io=0; io<2; io++){
    double best[3];
    for(int r=0;r<3;r++){
      double c0=tt(CLOCK_THREAD_CPUTIME_ID), w0=tt(CLOCK_MONOTONIC);
      for(int i=0;i<n;i++){
        /* random touches: a working set like a B-tree's, 2000 lines per iteration */
        for(int k=0;k<2000 && lines;k++){ seed=seed*6364136223846793005UL+1; size_t l=(seed>>20)%lines; mem[l*stride]++; }
        if(io) pwrite(fd,buf,4096,(off_t)(i%256)*4096);
      }
      double c1=tt(CLOCK_THREAD_CPUTIME_ID), w1=tt(CLOCK_MONOTONIC);
      best[r]=(c1-c0)/n;
      printf("ws %.0fMB io %d: cpu %.2f us/iter wall %.2f\n", ws/1048576.0, io, (c1-c0)/n, (w1-w0)/n);
    }
  }
  unlink(argv[1]);
}
