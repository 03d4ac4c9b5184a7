/* The attention kinds a family trains with (tformer train --attention
 * full|local|dilated|bigbird|nystrom and the pattern's knobs): one field table
 * for every family, mapped onto the one block's tf_block_config. */
#include <stddef.h>
#include <string.h>

#include "tformer/config.h"
#include "tformer/nn.h"

static const char *const KINDS[] = {"full", "local", "dilated", "bigbird", "nystrom", NULL};
static const char *const ROPES[] = {"none", "halves", "interleaved", NULL}; /* tf_rope_kind's order */
_Static_assert(sizeof(tf_attention_kind) == sizeof(int) && sizeof(tf_rope_kind) == sizeof(int),
               "enum rows store an int");

/* Not in the checkpoint's signature: the weights fit every kind (none adds a
 * tensor). A checkpoint records them with the other settings, so a resume that
 * changes them is a change of settings (--allow-changes), and an older
 * checkpoint without them resumes as full attention. The exceptions add a
 * tensor per layer, Nyström's convolution and Scalable-Softmax's s (ssmax):
 * in the signature when set (SIG_NEW: checkpoints from before the rows keep
 * theirs). */
#define ROWS_OF(P)                                                                                                     \
    {                                                                                                                  \
        R(kind, TF_FIELD_ENUM, P "attention", "full", NULL, KINDS,                                                     \
          "self-attention: full (the family's own), local, dilated, bigbird (block-sparse kernel; no dropout on the "  \
          "weights) or nystrom (encoders)"),                                                                           \
        R(window, TF_FIELD_INT, P "window", "16", "[0,inf)", NULL,                                                     \
          "local/dilated/bigbird: keys at offsets k*dilation, |k| <= window (causal: the window before)"),              \
        R(dilation, TF_FIELD_INT, P "dilation", "2", "[1,inf)", NULL, "dilated: the window's step"),                   \
        R(global_tokens, TF_FIELD_INT, P "global_tokens", "0", "[0,inf)", NULL,                                        \
          "local/dilated/bigbird: the first positions see and are seen by all"),                                       \
        R(random_blocks, TF_FIELD_INT, P "random_blocks", "3", "[0,inf)", NULL,                                        \
          "bigbird: random key blocks per query block"),                                                               \
        R(block_size, TF_FIELD_INT, P "block_size", "16", "[1,128]", NULL,                                             \
          "local/dilated/bigbird: the kernel's query and key blocks"),                                                 \
        R(pattern_seed, TF_FIELD_UINT64, P "pattern_seed", "0", NULL, NULL, "bigbird: the seed of the random blocks"), \
        R(landmarks, TF_FIELD_INT, P "landmarks", "64", "[0,inf)", NULL,                                               \
          "nystrom: landmarks (0: exact softmax); the length a multiple of it"),                                       \
        RS(conv_kernel, TF_FIELD_INT, P "conv_kernel", "0", "[0,inf)", NULL,                                           \
           "nystrom: taps of a depthwise convolution over the values added to the attention's output, per head "     \
           "(Nystromformer's conv_kernel_size; its LRA runs: 35); 0: none, else odd"),                                \
        R(rope, TF_FIELD_ENUM, P "rope", "none", NULL, ROPES,                                                          \
          "rotary positions in self-attention, any kind: none, halves (LLaMA's pairs x[i], x[i+D/2]) or "             \
          "interleaved (RoFormer's x[2i], x[2i+1]); a head's width must be even"),                                     \
        R(rope_base, TF_FIELD_FLOAT, P "rope_base", "10000", "(1,inf)", NULL,                                          \
          "rotary positions: pair i of a head of D turns by position * rope_base^(-2i/D)"),                            \
        RS(ssmax, TF_FIELD_FLOAT, P "ssmax", "0", "[0,inf)", NULL,                                                     \
           "Scalable-Softmax (full attention): each head's scores times s ln n, n the keys a query sees, s learned "   \
           "per head from this value; 0: off"),                                                                        \
    }
#define R(m, type, name, def, range, choices, help) \
    TF_FIELD_ROW(tf_attention_options, m, type, name, def, range, choices, help, 0, NULL)
#define RS(m, type, name, def, range, choices, help) \
    TF_FIELD_ROW(tf_attention_options, m, type, name, def, range, choices, help, \
                 TF_FIELD_SIGNATURE | TF_FIELD_SIG_NEW, NULL)
static const tf_field ROWS[] = ROWS_OF("");
static const tf_field HF_ROWS[] = ROWS_OF("tformer_");
#undef R
#undef RS
enum { N_ROWS = (int)(sizeof ROWS / sizeof ROWS[0]), N_KNOBS = 9 /* kind and the pattern's knobs; then rope's */ };

const tf_field_table tf_attention_table = {"attention", ROWS, N_ROWS};
const tf_field_table tf_attention_hf_table = {"config.json attention", HF_ROWS, N_ROWS};

/* The knobs (rows 1..8) each kind uses, a bit per row. */
static const unsigned USES[] = {
    [TF_ATTENTION_FULL] = 0,
    [TF_ATTENTION_LOCAL] = 1u << 1 | 1u << 3 | 1u << 5,
    [TF_ATTENTION_DILATED] = 1u << 1 | 1u << 2 | 1u << 3 | 1u << 5,
    [TF_ATTENTION_BIGBIRD] = 1u << 1 | 1u << 3 | 1u << 4 | 1u << 5 | 1u << 6,
    [TF_ATTENTION_NYSTROM] = 1u << 7 | 1u << 8,
};

/* A knob the kind does not use must keep its default: a value set for it would be ignored. */
static int unused_knobs(const tf_attention_options *o) {
    tf_attention_options def;
    tf_fields f = {&tf_attention_table, &def};
    if (tf_fields_defaults(&f, 1)) return -1;
    for (int r = 1; r < N_KNOBS; r++) {
        if (USES[o->kind] >> r & 1 || !memcmp((const char *)o + ROWS[r].offset, (const char *)&def + ROWS[r].offset,
                                             ROWS[r].size))
            continue;
        char v[64];
        tf_fields_format(&ROWS[r], o, v, sizeof v);
        return tf_set_error("attention %s does not use %s (set to %s)", KINDS[o->kind], ROWS[r].name, v);
    }
    return 0;
}

int tf_attention_apply(const tf_attention_options *o, tf_block_config *b) {
    if ((unsigned)o->kind > TF_ATTENTION_NYSTROM) return tf_set_error("attention: kind %d unknown", (int)o->kind);
    if (unused_knobs(o)) return -1;
    int causal = b->self_attn.kind == TF_ATTN_CAUSAL;
    b->self_attn.rope = o->rope, b->self_attn.rope_base = o->rope_base, b->self_attn.ssmax = o->ssmax;
    if (o->kind == TF_ATTENTION_FULL) return 0;
    if (o->ssmax != 0.0f)
        return tf_set_error("attention %s: ssmax (Scalable-Softmax) is an option of full attention", KINDS[o->kind]);
    b->attn_dropout = 0.0f;
    if (o->kind == TF_ATTENTION_NYSTROM) {
        if (causal) return tf_set_error("attention nystrom is not causal: this model needs causal attention");
        if (o->conv_kernel % 2 == 0 && o->conv_kernel)
            return tf_set_error("attention nystrom: conv_kernel %d must be 0 or odd (a convolution centred on each "
                                "position, as Nystromformer's)", o->conv_kernel);
        b->self_attn.kind = TF_ATTN_NYSTROM, b->self_attn.landmarks = o->landmarks, b->self_attn.conv_kernel = o->conv_kernel;
        return 0;
    }
    tf_sparse_pattern p = {.block = o->block_size, .causal = causal, .window = o->window,
                           .dilation = o->kind == TF_ATTENTION_DILATED ? o->dilation : 1,
                           .global_first = o->global_tokens,
                           .random = o->kind == TF_ATTENTION_BIGBIRD ? o->random_blocks : 0, .seed = o->pattern_seed};
    b->self_attn.kind = TF_ATTN_SPARSE, b->self_attn.sparse = p;
    return 0;
}
