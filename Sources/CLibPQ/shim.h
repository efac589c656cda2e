#include <libpq-fe.h>

/* A notice processor that drops notices ("relation already exists, skipping"): libpq's default
 * prints them on stderr, outside the service's structured log. */
static inline void insta_pq_ignore_notice(void *arg, const char *message) {
    (void)arg;
    (void)message;
}

static inline void insta_pq_silence_notices(PGconn *conn) {
    PQsetNoticeProcessor(conn, insta_pq_ignore_notice, 0);
}
