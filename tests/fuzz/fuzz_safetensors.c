/* libFuzzer target: any byte string given to the safetensors reader must give
 * a handle or an error, never a crash; every accepted tensor is converted, so
 * each byte the header points at is read. */
#include <stddef.h>
#include <stdint.h>

#include "tformer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    tf_st_file *f = tf_st_open_memory(data, size, "fuzz");
    if (!f) return 0;
    tf_arena *a = tf_arena_new(1 << 16);
    for (int i = 0; i < tf_st_count(f); i++) {
        const tf_st_entry *e = tf_st_entry_at(f, i);
        if (e->nbytes <= (1u << 20)) tf_st_to_tensor(f, e, a); /* values may be rejected: fine */
        tf_arena_reset(a);
    }
    tf_arena_free(a);
    tf_st_close(f);
    return 0;
}
