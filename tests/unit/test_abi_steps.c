/* The ABI's promise to plugins built earlier (backend_abi.h, "Rules steps"): an ABI 1
 * plugin built from the November 23 header (tests/plugins/abi1_nov23) keeps loading with
 * its smaller vtable, is held to the rules of its step, and when a composition fails on
 * it (it cannot hold half tensors) the error names the first failure, not the
 * "NULL operand" of the op that ran next. */
#include <stdlib.h>

#include "ff_impl.h"
#include "ff_test.h"

static ff_backend *old_plugin(void)
{
    static char path[4096];
    const char *dir = getenv("FF_TEST_PLUGIN_DIR");
    snprintf(path, sizeof path, "%s/libff_backend_abi1_nov23.so", dir ? dir : "test_plugins");
    return ff_backend_load(path);
}

static void test_old_plugin_loads_at_its_step(void)
{
    ff_backend *old = old_plugin(), *cpu = ff_backend_load("cpu");
    CHECK(old != NULL && cpu != NULL);
    if (!old || !cpu) return;
    /* built before abi_step existed: its struct ends earlier, and it keeps the old rules */
    CHECK(old->vt->struct_size < sizeof(ff_backend_vtable));
    CHECK(old->vt->struct_size < offsetof(ff_backend_vtable, abi_step) + sizeof(uint32_t));
    CHECK(ff_backend_abi_step(old) == FF_ABI_STEP_UNSTATED);
    CHECK(ff_backend_abi_step(cpu) == FF_ABI_STEP);
    CHECK(ff_backend_abi_step(NULL) == -1);
    /* its optional tail reads as absent, so the core composes softmax on it */
    CHECK(!ff_backend_has_softmax(old));
    /* and it really is the old kind: relu(-0) = +0 there, -0 on today's reference */
    const float mz = -0.0f;
    ff_tensor *xo = ff_from_data_on(old, &mz, 1, SHAPE(1), FF_F32), *xc = ff_from_data_on(cpu, &mz, 1, SHAPE(1), FF_F32);
    ff_tensor *yo = xo ? ff_relu(xo) : NULL, *yc = xc ? ff_relu(xc) : NULL;
    float ro = 1, rc = 1;
    CHECK(yo && yc && ff_tensor_to_host(yo, &ro, sizeof ro) == FF_OK && ff_tensor_to_host(yc, &rc, sizeof rc) == FF_OK);
    CHECK(ro == 0 && !signbit(ro));
    CHECK(rc == 0 && signbit(rc));
    ff_tensor_release(xo);
    ff_tensor_release(xc);
    ff_tensor_release(yo);
    ff_tensor_release(yc);
}

/* Compositions on a half tensor the backend cannot convert: each must fail with the
 * copy that failed, never with an op's complaint about the NULL it was handed next. */
static void test_composition_names_the_first_failure(void)
{
    ff_backend *old = old_plugin();
    CHECK(old != NULL);
    if (!old) return;
    const uint16_t one[12] = {0x3C00, 0x4000, 0x3C00, 0x4200, 0x3C00, 0x4000,
                              0x3C00, 0x4200, 0x3C00, 0x4000, 0x3C00, 0x4200}; /* f16 1, 2, 3 */
    ff_tensor *x = ff_from_data_on(old, one, 2, SHAPE(4, 3), FF_F16);
    ff_tensor *w = ff_from_data_on(old, one, 1, SHAPE(3), FF_F16), *b = ff_from_data_on(old, one, 1, SHAPE(3), FF_F16);
    CHECK(x && w && b);
    if (x && w && b) {
        ff_tensor *r = ff_batch_norm(x, NULL, NULL, w, b, true, 0.1, 1e-5);
        CHECK_ERROR(r == NULL, FF_ERR_UNSUPPORTED, "cannot copy f16");
        CHECK(strstr(ff_last_error(), "NULL") == NULL);
        ff_tensor_release(r);
        r = ff_softmax(x, 1);
        CHECK_ERROR(r == NULL, FF_ERR_UNSUPPORTED, "cannot copy f16");
        CHECK(strstr(ff_last_error(), "NULL") == NULL);
        ff_tensor_release(r);
        /* eval mode: the f16 weight's cast fails inside a nested step (ff_mul(scale,
         * cast(weight))), whose outer op then runs on the NULL */
        const float f[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, ones[3] = {1, 1, 1};
        ff_tensor *xf = ff_from_data_on(old, f, 2, SHAPE(4, 3), FF_F32);
        ff_tensor *rm = ff_from_data_on(old, ones, 1, SHAPE(3), FF_F32), *rv = ff_from_data_on(old, ones, 1, SHAPE(3), FF_F32);
        r = xf && rm && rv ? ff_batch_norm(xf, rm, rv, w, NULL, false, 0.1, 1e-5) : NULL;
        CHECK_ERROR(r == NULL, FF_ERR_UNSUPPORTED, "cannot copy f16");
        CHECK(strstr(ff_last_error(), "NULL") == NULL);
        ff_tensor_release(r);
        ff_tensor_release(xf);
        ff_tensor_release(rm);
        ff_tensor_release(rv);
        r = ff_layer_norm(x, 1, w, b, 1e-5);
        CHECK(r == NULL && strstr(ff_last_error(), "NULL") == NULL && strstr(ff_last_error(), "f16"));
        ff_tensor_release(r);
    }
    ff_tensor_release(x);
    ff_tensor_release(w);
    ff_tensor_release(b);
}

int main(void)
{
    static const ff_test_case cases[] = {
        {"old_plugin_loads_at_its_step", test_old_plugin_loads_at_its_step},
        {"composition_names_the_first_failure", test_composition_names_the_first_failure},
    };
    return ff_test_run("abi_steps", cases, (int)(sizeof cases / sizeof cases[0]));
}
