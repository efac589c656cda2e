#include <http_parser.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>

/* accept4(2) is declared by <sys/socket.h> only under _GNU_SOURCE. */
int accept4(int sockfd, struct sockaddr *addr, socklen_t *addrlen, int flags);
