// libvips for Swift. Every vips operation takes its optional arguments as NULL-terminated
// varargs, which Swift cannot call, so each one used here gets a fixed-signature wrapper.
// The wrappers only pass arguments through; the decisions (limits, options) live in Swift.
#include <vips/vips.h>

/// VIPS_INIT is a macro (an ABI check, then vips_init).
static inline int shim_vips_init(const char *argv0) { return VIPS_INIT(argv0); }

// MARK: Loaders (header only: pixels are decoded when first read)

static inline int shim_vips_jpegload_buffer(void *buf, size_t len, VipsImage **out, VipsAccess access, VipsFailOn failOn) {
    return vips_jpegload_buffer(buf, len, out, "access", access, "fail_on", failOn, NULL);
}
static inline int shim_vips_pngload_buffer(void *buf, size_t len, VipsImage **out, VipsAccess access, VipsFailOn failOn) {
    return vips_pngload_buffer(buf, len, out, "access", access, "fail_on", failOn, NULL);
}
static inline int shim_vips_webpload_buffer(void *buf, size_t len, VipsImage **out, VipsAccess access, VipsFailOn failOn) {
    return vips_webpload_buffer(buf, len, out, "access", access, "fail_on", failOn, NULL);
}
static inline int shim_vips_heifload_buffer(void *buf, size_t len, VipsImage **out, VipsAccess access, VipsFailOn failOn) {
    return vips_heifload_buffer(buf, len, out, "access", access, "fail_on", failOn, NULL);
}

/// Any format libvips recognises (for checking outputs; uploads never go through this).
static inline VipsImage *shim_vips_image_new_from_buffer(void *buf, size_t len) {
    return vips_image_new_from_buffer(buf, len, "", NULL);
}

// MARK: Operations

static inline int shim_vips_autorot(VipsImage *in, VipsImage **out) { return vips_autorot(in, out, NULL); }

/// Transforms to sRGB with the image's embedded ICC profile; the result is tagged with libvips's sRGB profile.
static inline int shim_vips_icc_transform_embedded_to_srgb(VipsImage *in, VipsImage **out) {
    return vips_icc_transform(in, out, "srgb", "embedded", TRUE, NULL);
}
/// Transforms with a named output profile ("srgb", "cmyk" are built into libvips 8.14), embedding it.
static inline int shim_vips_icc_transform(VipsImage *in, VipsImage **out, const char *profile) {
    return vips_icc_transform(in, out, profile, NULL);
}
static inline int shim_vips_colourspace(VipsImage *in, VipsImage **out, VipsInterpretation space) {
    return vips_colourspace(in, out, space, NULL);
}
static inline int shim_vips_cast(VipsImage *in, VipsImage **out, VipsBandFormat format) {
    return vips_cast(in, out, format, NULL);
}
/// Blends the alpha band onto a background of one grey level (255: white) in every band.
static inline int shim_vips_flatten(VipsImage *in, VipsImage **out, double level) {
    double levels[3] = {level, level, level};
    VipsArrayDouble *background = vips_array_double_new(levels, 3);
    int result = vips_flatten(in, out, "background", background, NULL);
    vips_area_unref(VIPS_AREA(background));
    return result;
}
static inline int shim_vips_extract_band(VipsImage *in, VipsImage **out, int band, int n) {
    return vips_extract_band(in, out, band, "n", n, NULL);
}
static inline int shim_vips_rot(VipsImage *in, VipsImage **out, VipsAngle angle) { return vips_rot(in, out, angle, NULL); }
static inline int shim_vips_resize(VipsImage *in, VipsImage **out, double hscale, double vscale) {
    return vips_resize(in, out, hscale, "vscale", vscale, NULL);
}
/// Fits inside width × height; `size` VIPS_SIZE_DOWN never upscales; `crop` VIPS_INTERESTING_CENTRE fills the box.
static inline int shim_vips_thumbnail_image(
    VipsImage *in, VipsImage **out, int width, int height, VipsSize size, VipsInteresting crop) {
    return vips_thumbnail_image(in, out, width, "height", height, "size", size, "crop", crop, NULL);
}
static inline int shim_vips_getpoint(VipsImage *in, double **vector, int *n, int x, int y) {
    return vips_getpoint(in, vector, n, x, y, NULL);
}

// MARK: Savers

static inline int shim_vips_jpegsave_buffer(
    VipsImage *in, void **buf, size_t *len, int quality, gboolean strip, gboolean optimizeCoding, gboolean interlace) {
    return vips_jpegsave_buffer(
        in, buf, len, "Q", quality, "strip", strip, "optimize_coding", optimizeCoding, "interlace", interlace, NULL);
}
static inline int shim_vips_pngsave_buffer(VipsImage *in, void **buf, size_t *len) {
    return vips_pngsave_buffer(in, buf, len, NULL);
}
static inline int shim_vips_webpsave_buffer(VipsImage *in, void **buf, size_t *len, int quality) {
    return vips_webpsave_buffer(in, buf, len, "Q", quality, NULL);
}
/// HEIC (HEVC through libheif's x265 encoder); `strip` FALSE keeps EXIF/XMP, which tests rely on.
static inline int shim_vips_heifsave_buffer(VipsImage *in, void **buf, size_t *len, int quality, gboolean strip) {
    return vips_heifsave_buffer(
        in, buf, len, "Q", quality, "compression", VIPS_FOREIGN_HEIF_COMPRESSION_HEVC, "strip", strip, NULL);
}
