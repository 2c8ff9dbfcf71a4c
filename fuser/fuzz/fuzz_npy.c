/*
 * fuzz_npy.c -- the .npy reader (fu_npy_read) on any bytes, and the
 * write/read round trip of what it accepts: fu_npy_write of the tensor read
 * reads back with the same dtype, shape and bytes. The input goes through a
 * memfd (fu_npy_read takes a path), the round trip through a directory under
 * /dev/shm (else $TMPDIR). Seeds: fuser/fuzz/corpus/npy.
 */
#define _GNU_SOURCE
#include <sys/mman.h>
#include <unistd.h>

#include "fuser.h"
#include "fuzz_common.h"

static char roundtrip_path[512];

static void setup(void)
{
    if (roundtrip_path[0]) return;
    const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    snprintf(roundtrip_path, sizeof roundtrip_path, "%s/fuzz_npy.%ld.npy", base, (long)getpid());
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    setup();
    int fd = memfd_create("fuzz_npy", 0);
    if (fd < 0) abort();
    FUZZ_REQUIRE(write(fd, data, size) == (ssize_t)size, "memfd write");
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    fu_host_tensor t;
    fu_error err;
    if (fu_npy_read(path, &t, &err) == FU_OK) {
        FUZZ_REQUIRE(fu_npy_write(roundtrip_path, &t, &err) == FU_OK, "cannot write back: %s", err.message);
        fu_host_tensor u;
        FUZZ_REQUIRE(fu_npy_read(roundtrip_path, &u, &err) == FU_OK, "cannot read back: %s", err.message);
        FUZZ_REQUIRE(u.dtype == t.dtype && u.rank == t.rank, "dtype or rank changed");
        for (int i = 0; i < t.rank; i++) FUZZ_REQUIRE(u.shape[i] == t.shape[i], "axis %d changed", i);
        FUZZ_REQUIRE(memcmp(u.data, t.data, fu_host_tensor_bytes(&t)) == 0, "the values changed");
        fu_host_tensor_free(&u);
        fu_host_tensor_free(&t);
        unlink(roundtrip_path);
    }
    close(fd);
    return 0;
}
