#include <spawn.h>
#include <unistd.h>

/* glibc (2.34 and later) declares these only with _GNU_SOURCE, which the Glibc module Swift
 * imports is built without; the prototypes are glibc's own (spawn.h, unistd.h). */
extern int posix_spawn_file_actions_addclosefrom_np(posix_spawn_file_actions_t *actions, int from);
extern int pipe2(int fds[2], int flags);
