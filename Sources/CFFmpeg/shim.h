// FFmpeg's libraries for Swift (Debian bookworm: FFmpeg 5.1). Function-like and casting macros are not
// imported into Swift, so the few this project needs are exposed as static inline functions.
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/avutil.h>
#include <libavutil/display.h>
#include <libavutil/error.h>
#include <libswscale/swscale.h>

static inline int shim_averror_eof(void) { return AVERROR_EOF; }
static inline int shim_averror(int posixError) { return AVERROR(posixError); }
static inline int64_t shim_av_nopts_value(void) { return AV_NOPTS_VALUE; }
