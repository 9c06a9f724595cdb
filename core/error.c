/* Errors: a status code plus a thread-local message, as SQLite's errmsg. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ff_impl.h"

#define FF_ERRMSG_MAX 1024

static _Thread_local char tl_msg[FF_ERRMSG_MAX];
static _Thread_local ff_status tl_status;

const char *ff_last_error(void) { return tl_msg; }
ff_status ff_last_status(void) { return tl_status; }

void ff_clear_error(void)
{
    tl_msg[0] = '\0';
    tl_status = FF_OK;
}

const char *ff_status_name(ff_status s)
{
    switch (s) {
    case FF_OK: return "ok";
    case FF_ERR_INVALID: return "invalid argument";
    case FF_ERR_OOM: return "out of memory";
    case FF_ERR_OVERFLOW: return "size overflow";
    case FF_ERR_UNSUPPORTED: return "unsupported";
    case FF_ERR_BACKEND: return "backend error";
    case FF_ERR_INDEX: return "index out of range";
    case FF_ERR_AUTOGRAD: return "autograd error";
    case FF_ERR_IO: return "i/o error";
    }
    return "unknown status";
}

/* Formats through a scratch buffer: callers may pass ff_last_error() itself as an
 * argument (re-raising with a new code), and vsnprintf onto its own source is UB. */
static void set_message(const char *fmt, va_list ap)
{
    char tmp[FF_ERRMSG_MAX];
    vsnprintf(tmp, sizeof tmp, fmt, ap);
    memcpy(tl_msg, tmp, sizeof tl_msg);
}

ff_status ff_set_error(ff_status code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    set_message(fmt, ap);
    va_end(ap);
    tl_status = code;
    return code;
}

void ff_error_set_message(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    set_message(fmt, ap);
    va_end(ap);
}

void ff_error_prefix(const char *fn)
{
    size_t n = strlen(fn);
    if (strncmp(tl_msg, fn, n) == 0 && tl_msg[n] == ':') return;
    char tmp[2 * FF_ERRMSG_MAX];
    snprintf(tmp, sizeof tmp, "%s: %s", fn, tl_msg);
    memcpy(tl_msg, tmp, FF_ERRMSG_MAX - 1);
    tl_msg[FF_ERRMSG_MAX - 1] = '\0';
}

void ff_log_debug(const char *fmt, ...)
{
    static int enabled = -1; /* racy first read is benign: every thread computes the same */
    if (enabled < 0) {
        const char *e = getenv("FF_LOG");
        enabled = e && *e && strcmp(e, "0") != 0;
    }
    if (!enabled) return;
    va_list ap;
    va_start(ap, fmt);
    fputs("[ff] ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

const ff_host_api ff_host = {
    .abi_version = FF_ABI_VERSION,
    .struct_size = sizeof(ff_host_api),
    .set_error = ff_error_set_message,
    .log = ff_log_debug,
};
