#include <resolv.h>

/* Caps how long getaddrinfo(3) waits for DNS on the calling thread only: at most `timeout` s per
 * query and `attempts` tries per server (resolv.conf's `options timeout: attempts:`, lowered for
 * this thread; settings already lower are kept). glibc keeps this state per thread in `_res`, a
 * macro, hence a C function. Returns 0, or -1 if res_init(3) fails. */
static inline int insta_resolver_cap(int timeout, int attempts) {
    if (res_init() != 0) return -1;
    if (_res.retrans > timeout) _res.retrans = timeout;
    if (_res.retry > attempts) _res.retry = attempts;
    return 0;
}
