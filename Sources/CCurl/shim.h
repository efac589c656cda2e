#ifndef CCURL_SHIM_H
#define CCURL_SHIM_H
#include <curl/curl.h>
/* The engine drives libcurl's multi_socket API over epoll, which Swift's Glibc does not export. */
#include <sys/epoll.h>

/* curl_easy_setopt / curl_easy_getinfo / curl_multi_setopt are variadic, which Swift cannot
   call: these typed wrappers are what the Swift side uses. */

typedef size_t (*ccurl_data_callback)(char *data, size_t size, size_t count, void *user);

static inline CURLcode ccurl_setopt_long(CURL *h, CURLoption o, long v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode ccurl_setopt_pointer(CURL *h, CURLoption o, void *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode ccurl_setopt_string(CURL *h, CURLoption o, const char *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode ccurl_setopt_slist(CURL *h, CURLoption o, struct curl_slist *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode ccurl_setopt_callback(CURL *h, CURLoption o, ccurl_data_callback f) { return curl_easy_setopt(h, o, f); }

/* CURLOPT_SOCKOPTFUNCTION (called once a socket exists, before it connects; return
   CURL_SOCKOPT_OK) and CURLOPT_CLOSESOCKETFUNCTION (must close the socket; return 0): how a
   caller learns which sockets libcurl has open. */
typedef int (*ccurl_sockopt_callback)(void *clientp, curl_socket_t fd, curlsocktype purpose);
typedef int (*ccurl_closesocket_callback)(void *clientp, curl_socket_t fd);
static inline CURLcode ccurl_setopt_sockopt_callback(CURL *h, ccurl_sockopt_callback f) {
    return curl_easy_setopt(h, CURLOPT_SOCKOPTFUNCTION, f);
}
static inline CURLcode ccurl_setopt_closesocket_callback(CURL *h, ccurl_closesocket_callback f) {
    return curl_easy_setopt(h, CURLOPT_CLOSESOCKETFUNCTION, f);
}

static inline long ccurl_response_code(CURL *h) {
    long code = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
    return code;
}

static inline void *ccurl_private(CURL *h) {
    char *p = 0;
    curl_easy_getinfo(h, CURLINFO_PRIVATE, &p);
    return (void *)p;
}

static inline CURLMcode ccurl_multi_setopt_long(CURLM *m, CURLMoption o, long v) { return curl_multi_setopt(m, o, v); }
static inline CURLMcode ccurl_multi_setopt_pointer(CURLM *m, CURLMoption o, void *v) { return curl_multi_setopt(m, o, v); }

/* The multi_socket API's callbacks (CURLMOPT_SOCKETFUNCTION, CURLMOPT_TIMERFUNCTION), with the
   prototypes from curl/multi.h spelled out so Swift imports them as @convention(c) types.
   Socket callback: `what` is CURL_POLL_IN / OUT / INOUT / REMOVE; `socketp` is what
   curl_multi_assign stored for the socket (NULL if nothing). Timer callback: `timeout_ms` -1 =
   delete the timer, 0 = call curl_multi_socket_action(CURL_SOCKET_TIMEOUT) as soon as possible.
   Both return 0 on success, -1 on error; neither may call libcurl. */
typedef int (*ccurl_socket_callback)(CURL *easy, curl_socket_t s, int what, void *userp, void *socketp);
typedef int (*ccurl_timer_callback)(CURLM *multi, long timeout_ms, void *userp);

static inline CURLMcode ccurl_multi_setopt_socket_callback(CURLM *m, ccurl_socket_callback f) {
    return curl_multi_setopt(m, CURLMOPT_SOCKETFUNCTION, f);
}
static inline CURLMcode ccurl_multi_setopt_timer_callback(CURLM *m, ccurl_timer_callback f) {
    return curl_multi_setopt(m, CURLMOPT_TIMERFUNCTION, f);
}

/* CURLMsg carries a union; these read it without Swift having to know its layout. */
static inline CURL *ccurl_msg_handle(CURLMsg *m) { return m->easy_handle; }
static inline int ccurl_msg_is_done(CURLMsg *m) { return m->msg == CURLMSG_DONE; }
static inline CURLcode ccurl_msg_result(CURLMsg *m) { return m->data.result; }

#endif
