/* Producer/consumer on two threads (tests/e2e/test_recorded_threads_signals.py):
 * a mutex-protected slot, handed over with a condition variable, and a
 * `counter` both threads increment without the lock (a data race; the
 * recording serialises the threads, so no update is lost there). The tests
 * find source lines by the "MARK:" comments. */
#include <pthread.h>
#include <stdio.h>

#define ITEMS 20

long counter;              /* the racy global */
static long slot, full;    /* guarded by lock */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;

static void *consumer(void *arg) {
  long sum = 0;
  (void)arg;
  for (int i = 0; i < ITEMS; i++) {
    pthread_mutex_lock(&lock);
    while (!full) pthread_cond_wait(&changed, &lock);
    sum += slot;
    full = 0;
    pthread_cond_signal(&changed);
    pthread_mutex_unlock(&lock);
    counter += 1000; /* MARK:consumer-add */
  }
  return (void *)sum;
}

int main(void) {
  pthread_t t;
  pthread_create(&t, NULL, consumer, NULL);
  for (int i = 1; i <= ITEMS; i++) {
    pthread_mutex_lock(&lock);
    while (full) pthread_cond_wait(&changed, &lock);
    slot = i;
    full = 1;
    pthread_cond_signal(&changed);
    pthread_mutex_unlock(&lock);
    counter += 1; /* MARK:producer-add */
  }
  void *sum;
  pthread_join(t, &sum);
  printf("sum %ld counter %ld\n", (long)sum, counter); /* MARK:print */
  return 0;
}
