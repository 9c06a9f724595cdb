/*
 * Which device: FF_OPENCL_DEVICE=<platform>:<device>, each part an index or a
 * case-insensitive substring of the name (for a platform, of its name or vendor:
 * "0:1", "pocl:", ":nvidia", "1"); an empty
 * part matches anything. Default: the first GPU of any platform, else the first device.
 * The device must offer cl_khr_fp64: the kernels compute float ops in double so that
 * f32 results are the reference's (one rounding), as the CPU backends do.
 */
#define _GNU_SOURCE /* strcasestr */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ocl_impl.h"

#define MAX_PLATFORMS 16
#define MAX_DEVICES 32

/* Does `part` (an index or a name substring, or empty) select item i named `name`? */
static int selects(const char *part, size_t len, int i, const char *name)
{
    if (len == 0) return 1;
    char buf[128];
    if (len >= sizeof buf) len = sizeof buf - 1;
    memcpy(buf, part, len);
    buf[len] = 0;
    char *end;
    long idx = strtol(buf, &end, 10);
    if (*end == 0) return idx == i;
    return strcasestr(name, buf) != NULL;
}

static void info_str(cl_device_id d, cl_device_info what, char *out, size_t cap)
{
    size_t need = 0;
    char *tmp = NULL;
    if (clGetDeviceInfo(d, what, 0, NULL, &need) != CL_SUCCESS || !(tmp = calloc(1, need + 1)) ||
        clGetDeviceInfo(d, what, need, tmp, NULL) != CL_SUCCESS)
        snprintf(out, cap, "?");
    else
        snprintf(out, cap, "%s", tmp); /* truncated to cap */
    free(tmp);
}

static int has_fp64(cl_device_id d)
{
    char ext[16384];
    info_str(d, CL_DEVICE_EXTENSIONS, ext, sizeof ext);
    return strstr(ext, "cl_khr_fp64") != NULL;
}

ff_status ocl_device_open(ocl_ctx *c)
{
    cl_platform_id plats[MAX_PLATFORMS];
    cl_uint np = 0;
    cl_int err = clGetPlatformIDs(MAX_PLATFORMS, plats, &np);
    if (err != CL_SUCCESS || np == 0) /* -1001: CL_PLATFORM_NOT_FOUND_KHR, the ICD loader found no vendor */
        return ocl_error(c, FF_ERR_BACKEND,
                         "opencl: no OpenCL platform found (%s); install a driver, e.g. Debian's pocl-opencl-icd "
                         "for this CPU, and check /etc/OpenCL/vendors",
                         err == CL_SUCCESS || err == -1001 ? "none registered" : ocl_cl_error_name(err));
    const char *sel = getenv("FF_OPENCL_DEVICE");
    const char *colon = sel ? strchr(sel, ':') : NULL;
    size_t plen = sel ? (colon ? (size_t)(colon - sel) : strlen(sel)) : 0;
    const char *dpart = colon ? colon + 1 : "";
    int found = 0, found_gpu = 0;
    for (cl_uint p = 0; p < np && !found_gpu; p++) {
        char pname[128] = "?", vendor[128] = "", both[260];
        clGetPlatformInfo(plats[p], CL_PLATFORM_NAME, sizeof pname, pname, NULL);
        clGetPlatformInfo(plats[p], CL_PLATFORM_VENDOR, sizeof vendor, vendor, NULL);
        pname[sizeof pname - 1] = vendor[sizeof vendor - 1] = 0;
        snprintf(both, sizeof both, "%s / %s", pname, vendor); /* "pocl" is in PoCL's vendor only */
        if (sel && !selects(sel, plen, (int)p, both)) continue;
        cl_device_id devs[MAX_DEVICES];
        cl_uint nd = 0;
        if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, MAX_DEVICES, devs, &nd) != CL_SUCCESS) continue;
        for (cl_uint i = 0; i < nd && !found_gpu; i++) {
            char dname[128];
            info_str(devs[i], CL_DEVICE_NAME, dname, sizeof dname);
            if (sel && !selects(dpart, strlen(dpart), (int)i, dname)) continue;
            cl_device_type type = 0;
            clGetDeviceInfo(devs[i], CL_DEVICE_TYPE, sizeof type, &type, NULL);
            /* the first match wins, except that without a selection a later GPU beats a CPU */
            int gpu = sel || (type & CL_DEVICE_TYPE_GPU) != 0;
            if (found && !gpu) continue;
            c->platform = plats[p];
            c->device = devs[i];
            snprintf(c->platform_name, sizeof c->platform_name, "%s", pname);
            snprintf(c->device_name, sizeof c->device_name, "%s", dname);
            found = 1;
            found_gpu = gpu;
        }
    }
    if (!found)
        return ocl_error(c, FF_ERR_BACKEND, "opencl: no OpenCL device matches FF_OPENCL_DEVICE=\"%s\" "
                         "(<platform>:<device>, each an index or a name substring; `clinfo -l` lists them)",
                         sel ? sel : "");
    if (!has_fp64(c->device))
        return ocl_error(c, FF_ERR_BACKEND, "opencl: device \"%s\" lacks cl_khr_fp64, which this backend needs "
                         "(float ops are computed in double, as the reference does)", c->device_name);
    info_str(c->device, CL_DEVICE_VERSION, c->device_version, sizeof c->device_version);
    clGetDeviceInfo(c->device, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof c->global_mem, &c->global_mem, NULL);
    clGetDeviceInfo(c->device, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof c->max_alloc, &c->max_alloc, NULL);
    clGetDeviceInfo(c->device, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof c->compute_units, &c->compute_units, NULL);
    cl_device_type type = 0;
    clGetDeviceInfo(c->device, CL_DEVICE_TYPE, sizeof type, &type, NULL);
    c->cpu_device = (type & CL_DEVICE_TYPE_CPU) != 0;
    /* FF_OPENCL_CPU_KERNELS=0: the kernels shaped for a GPU on a CPU device too (ctest
     * runs them on PoCL that way) */
    const char *shapes = getenv("FF_OPENCL_CPU_KERNELS");
    if (shapes && !strcmp(shapes, "0")) c->cpu_device = 0;
    clGetDeviceInfo(c->device, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof c->max_wg, &c->max_wg, NULL);

    c->context = clCreateContext(NULL, 1, &c->device, NULL, NULL, &err);
    if (!c->context) return ocl_cl_fail(c, "init", "clCreateContext", err);
    c->queue = clCreateCommandQueue(c->context, c->device, 0, &err); /* in order */
    if (!c->queue) return ocl_cl_fail(c, "init", "clCreateCommandQueue", err);
    return FF_OK;
}
