#!/bin/sh
# Bit-identity fingerprints (make fingerprints; docs/design.md): SHA-256 of the
# outputs of small fixed-seed runs of every model family, to tell whether a
# change (a refactor) leaves every output the same to the bit on this machine.
#   sh tools/fingerprints.sh BIN OUTFILE [THREADS...]   record (threads: default "1 2")
#   sh tools/fingerprints.sh --compare [REV] [THREADS...]
#       build REV (default: the merge-base of HEAD and main) in a temporary git
#       worktree, run the same workloads with its tformer and with this tree's
#       (make build/tformer), print "N equal, M differ" and the cases that differ
#   sh tools/fingerprints.sh --diff A B                  two recorded files, as --compare
# OUTFILE: '#' header lines (day, CPU, `tformer --version`), then one line per
# output, sorted: "<threads> <case> <sha256>". The cases (each run with
# TFORMER_THREADS and, where the verb takes it, --threads):
#   train/ARCH/{model.safetensors,checkpoint.safetensors,losses.csv}: a few steps of
#     every --arch (gpt bert seq2seq rnn vit swin imagegpt vivit continual listops)
#     on tiny data: tinyshakespeare, Multi30k (../shared/data), Debian's fortunes,
#     synthetic idx images and PNG frames written here (python3, no packages);
#     and checkpoint.tensors: the checkpoint's tensors without its __metadata__;
#   verb/...: generate (greedy, sampled, beam, int8), eval, translate (greedy,
#     beam, attention PNGs), classify (idx, PNG, attention, clips), embed,
#     fill-mask, finetune + predict, stream, complete-image on those folders and on
#     committed sentence-transformers / fill-mask fixtures (their stdout, timings
#     none, and the files they write);
#   hf-run/DIR, torch-run/DIR: every committed case folder under tests/fixtures*/
#     (config.json + model.safetensors or weights.safetensors + input.safetensors):
#     the output safetensors.
# A case that fails is reported on stderr with its command and stderr, recorded as
# FAILED-<status>, and the script exits 1 at the end. Data: TFORMER_SHARED
# (default ../shared/data beside the repository), FORTUNES (/usr/share/games/fortunes);
# FP_KEEP=1 keeps the temporary folder (data, run folders, each case's out and err).
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
shared=${TFORMER_SHARED:-$root/../shared/data}
fortunes=${FORTUNES:-/usr/share/games/fortunes}
py=${PYTHON:-python3}
me=fingerprints

usage() {
    echo "usage: sh tools/fingerprints.sh BIN OUTFILE [THREADS...]" >&2
    echo "       sh tools/fingerprints.sh --compare [REV] [THREADS...]" >&2
    echo "       sh tools/fingerprints.sh --diff A B" >&2
    exit 2
}
die() { echo "$me: $*" >&2; exit 2; }

# ---- data, written once into $data (shared by every binary and thread count) ----

# The images: idx sets of 12x12 stripes (3 classes: rows, columns, diagonals at
# two phases over hashed noise, as tests/test_vit_train.c), a 12x12 and a 6x6
# PNG, and a clip of 4 PNG frames of 18x18 (a square moving right).
make_images() {
    "$py" - "$1" <<'PY'
import struct, sys, zlib
d = sys.argv[1]
def pixel(i, c, y, x):
    phase, noise = (i // 3) % 2, (((i * 131 + y * 17 + x * 29) * 2654435761) & 0xffffffff) >> 27
    on = ((y if c == 0 else x if c == 1 else x + y) % 3) == phase
    return 200 + noise if on else noise * 3
def idx(split, n, side=12, classes=3):
    img = bytes(pixel(i, i % classes, y, x) for i in range(n) for y in range(side) for x in range(side))
    with open(f"{d}/img/{split}-images-idx3-ubyte", "wb") as f:
        f.write(struct.pack(">IIII", 0x803, n, side, side) + img)
    with open(f"{d}/img/{split}-labels-idx1-ubyte", "wb") as f:
        f.write(struct.pack(">II", 0x801, n) + bytes(i % classes for i in range(n)))
def png(path, w, h, px):
    raw = b"".join(b"\0" + bytes(px[y * w:(y + 1) * w]) for y in range(h))
    chunk = lambda t, b: struct.pack(">I", len(b)) + t + b + struct.pack(">I", zlib.crc32(t + b))
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 0)) +
                chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))
idx("train", 240), idx("t10k", 60)
png(f"{d}/diag.png", 12, 12, [((x + y) % 3 == 0) * 200 + (x * 7 + y * 3) % 20 for y in range(12) for x in range(12)])
png(f"{d}/small.png", 6, 6, [((x + y) % 3 == 0) * 200 + (x * 7 + y * 3) % 20 for y in range(6) for x in range(6)])
for t in range(4):
    png(f"{d}/clip/{t:02d}.png", 18, 18, [200 if 2 * t <= x < 2 * t + 6 and 3 <= y < 9 else 10
                                         for y in range(18) for x in range(18)])
PY
}

# pairs SRC.gz TGT.gz N OUT_SRC OUT_TGT: the first N line pairs both under 60 characters.
pairs() {
    gzip -dc "$1" | head -n 3000 >"$data/p.src" && gzip -dc "$2" | head -n 3000 >"$data/p.tgt" &&
        paste "$data/p.src" "$data/p.tgt" | awk -F '\t' 'length($1) < 60 && length($2) < 60' |
        head -n "$3" >"$data/p.tsv" &&
        cut -f1 "$data/p.tsv" >"$4" && cut -f2 "$data/p.tsv" >"$5" && rm -f "$data/p.src" "$data/p.tgt" "$data/p.tsv"
}

make_data() {
    for f in tinyshakespeare/input.txt bert/bert-base-uncased-vocab.txt multi30k/train.de.gz multi30k/val.en.gz; do
        [ -f "$shared/$f" ] || die "missing $shared/$f (set TFORMER_SHARED to the shared data folder)"
    done
    for f in computers food; do [ -f "$fortunes/$f" ] || die "missing $fortunes/$f (apt-get install fortunes)"; done
    mkdir -p "$data/img" "$data/clip" || die "cannot write $data"
    make_images "$data" || die "cannot write the images (python3)"
    head -c 30000 "$shared/tinyshakespeare/input.txt" >"$data/text.txt"
    m=$shared/multi30k
    { pairs "$m/train.de.gz" "$m/train.en.gz" 300 "$data/train.de" "$data/train.en" &&
        pairs "$m/val.de.gz" "$m/val.en.gz" 40 "$data/val.de" "$data/val.en"; } || die "cannot read $m"
    head -n 5 "$data/val.de" >"$data/five.de"
    for c in computers food; do head -c 12000 "$fortunes/$c" >"$data/$c"; done
    # finetune: label<TAB>text, a fortune line of each category (3 of 4 train, 1 of 4 valid)
    for c in computers food; do
        grep -v '^%' "$fortunes/$c" | tr -d '\t' | awk -v c="$c" 'length($0) > 20 { print c "\t" $0 }' | head -n 40
    done >"$data/ft.all"
    awk 'NR % 4 != 0' "$data/ft.all" >"$data/ft.train" && awk 'NR % 4 == 0' "$data/ft.all" >"$data/ft.valid"
    cut -f2 "$data/ft.valid" | head -n 6 >"$data/ft.texts"
    printf 'the king is dead\nlong live the queen\nto be or not to be\n' >"$data/sents"
    printf 'the computer program crashed\nfood is tasty and the soup was hot\n' >"$data/stream.txt"
}

# ---- running the cases ----

# run NAME [<STDIN] CMD...: CMD in $work (where data/ is the data: what a verb
# prints of its inputs' names is the same in every run), stdout in $work/NAME/out,
# stderr in err; 0, or reported on stderr and recorded as failed (FAILED-<status>).
run() {
    r_name=$1 r_in=/dev/null
    shift
    case $1 in "<"*) r_in=${1#<} && shift ;; esac
    r_dir=$work/$r_name
    mkdir -p "$r_dir"
    (cd "$work" && "$@" <"$r_in" >"$r_dir/out" 2>"$r_dir/err")
    r_rc=$?
    [ $r_rc -eq 0 ] && return 0
    echo "$me: case $r_name failed (exit $r_rc, TFORMER_THREADS=$threads): $*" >&2
    tail -n 20 "$r_dir/err" | sed 's/^/    /' >&2
    echo "$threads $r_name FAILED-$r_rc" >>"$list"
    failed=$((failed + 1))
    return 1
}

# fp CASE FILE: one fingerprint line (a missing file: MISSING)
fp() {
    if [ -f "$2" ]; then
        echo "$threads $1 $(sha256sum <"$2" | cut -d' ' -f1)" >>"$list"
    else
        echo "$me: case $1: no file $2" >&2
        echo "$threads $1 MISSING" >>"$list"
        failed=$((failed + 1))
    fi
}

# verb NAME [<STDIN] CMD...: a run whose stdout is the fingerprint (the
# temporary folder's name, which it may print, replaced by TMP)
verb() {
    run "$@" && sed "s|$tmp|TMP|g" "$work/$1/out" >"$work/$1/out.fp" && fp "$1" "$work/$1/out.fp"
}

# train ARCH FLAGS...: a run folder $work/ARCH, its weights, checkpoint and losses
train() {
    arch=$1
    shift
    run "train/$arch" "$tf" train --arch "$arch" --out "$work/$arch" --threads "$threads" "$@" || return 0
    for f in model.safetensors checkpoint.safetensors losses.csv; do fp "train/$arch/$f" "$work/$arch/$f"; done
    # the checkpoint's tensors alone (names, shapes, bytes), without its
    # __metadata__, so that a change to what a checkpoint records about its run
    # (as the data files' digests) is told apart from a change to the weights
    "$py" - "$work/$arch/checkpoint.safetensors" >"$work/$arch/checkpoint.tensors" <<'PY' || return 0
import json, struct, sys
raw = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
head = json.loads(raw[8:8 + n])
head.pop("__metadata__", None)
sys.stdout.write(json.dumps(head, sort_keys=True) + "\n")
sys.stdout.flush()
sys.stdout.buffer.write(raw[8 + n:])
PY
    fp "train/$arch/checkpoint.tensors" "$work/$arch/checkpoint.tensors"
}

# The trained folders and what runs on them, under $threads threads.
families() {
    d=data small="--n-layer 1 --d-model 16 --n-head 2"
    # shellcheck disable=SC2086 # $small: a list of flags
    train gpt --data "$d/text.txt" --steps 30 --lr 3e-3 --batch 8 --context 32 --n-layer 1 --d-model 32 --n-head 2 \
        --eval-every 15 --eval-batches 2 --warmup 5
    verb generate/gpt-greedy "$tf" generate --model "$work/gpt" --prompt "ROMEO:" --max-tokens 40 --temperature 0
    verb generate/gpt-sampled "$tf" generate --model "$work/gpt" --prompt "ROMEO:" --max-tokens 40 --seed 7 --top-k 10 \
        --top-p 0.9 --temperature 0.8
    verb generate/gpt-beam "$tf" generate --model "$work/gpt" --prompt "ROMEO:" --max-tokens 20 --beam 3
    verb generate/gpt-int8 "$tf" generate --model "$work/gpt" --prompt "ROMEO:" --max-tokens 20 --temperature 0 \
        --precision int8
    verb eval/gpt "$tf" eval --model "$work/gpt" --data "$d/text.txt"
    verb eval/gpt-int8 "$tf" eval --model "$work/gpt" --data "$d/text.txt" --precision int8

    # shellcheck disable=SC2086
    train bert --data "$d/text.txt" --tokenizer "$shared/bert/bert-base-uncased-vocab.txt" --steps 6 --batch 4 \
        --context 32 $small --eval-every 6 --eval-batches 2 --warmup 2
    verb embed/bert "<$d/sents" "$tf" embed --model "$work/bert"
    verb embed/bert-cls "<$d/sents" "$tf" embed --model "$work/bert" --pooling cls --normalize
    verb fill-mask/bert "$tf" fill-mask --model "$work/bert" --text "the king is [MASK] ." --top-k 3
    if run finetune/bert "$tf" finetune --model "$work/bert" --train "$d/ft.train" --valid "$d/ft.valid" \
        --out "$work/ft" --threads "$threads" --steps 4 --batch 8 --warmup 1 --lr 1e-3 --max-len 32 --eval-every 4; then
        for f in model.safetensors losses.csv metrics.json; do fp "finetune/bert/$f" "$work/ft/$f"; done
        verb predict/bert "<$d/ft.texts" "$tf" predict --model "$work/ft"
    fi
    fx=$root/tests/fixtures_distilbert_st/tiny_distilbert_mlm
    if run finetune/distilbert "$tf" finetune --model "$fx" --train "$d/ft.train" --valid "$d/ft.valid" \
        --out "$work/ft2" --threads "$threads" --steps 3 --batch 8 --warmup 1 --lr 1e-3 --max-len 16 \
        --eval-every 3; then
        for f in model.safetensors losses.csv metrics.json; do fp "finetune/distilbert/$f" "$work/ft2/$f"; done
        verb predict/distilbert "<$d/ft.texts" "$tf" predict --model "$work/ft2"
    fi
    verb fill-mask/distilbert "$tf" fill-mask --model "$fx" --text "the king is [MASK] ." --top-k 3
    for fx in distilbert_st/tiny_distilbert_st roberta_st/tiny_roberta_st xlmr_st/tiny_xlmr_st; do
        verb "embed/${fx#*/}" "<$d/sents" "$tf" embed --model "$root/tests/fixtures_$fx"
    done

    s2s="--src $d/train.de --tgt $d/train.en --valid-src $d/val.de --valid-tgt $d/val.en --context 64 --max-len 64"
    # a batch's token budget: --batch-tokens (--max-tokens before 2026-12, so that --compare runs older binaries)
    bt=--batch-tokens
    "$tf" train --arch seq2seq --help | grep -- '--batch-tokens' >/dev/null || bt=--max-tokens
    # shellcheck disable=SC2086
    train seq2seq $s2s --steps 150 --lr 5e-3 --dropout 0 --label-smoothing 0.1 --d-model 32 --n-head 2 \
        --n-encoder-layers 1 --n-decoder-layers 1 $bt 512 --eval-every 75 --val-bleu 8 --warmup 10
    # shellcheck disable=SC2086
    train rnn $s2s --steps 20 --lr 5e-3 --emb-dim 16 --hidden 16 --attn-size 16 --cell lstm $bt 512 \
        --eval-every 10 --val-bleu 8 --warmup 5
    for m in seq2seq rnn; do
        verb "translate/$m-greedy" "<$d/five.de" "$tf" translate --model "$work/$m"
        verb "translate/$m-beam" "<$d/five.de" "$tf" translate --model "$work/$m" --beam 3 --batch 2
    done
    if verb translate/seq2seq-attention "<$d/five.de" "$tf" translate --model "$work/seq2seq" --max-len-a 0 \
        --max-len-b 12 --attention-png "$work/translate/seq2seq-attention/png"; then
        fp translate/seq2seq-attention/0001.png "$work/translate/seq2seq-attention/png/0001.png"
    fi

    # shellcheck disable=SC2086
    train vit --data-dir "$d/img" --image-size 12 --patch-size 3 $small --n-labels 3 --steps 5 --batch 16 --warmup 2 \
        --eval-every 5 --label-names rows,columns,diagonals
    # shellcheck disable=SC2086
    train swin --data-dir "$d/img" --image-size 12 --patch-size 2 --d-model 8 --depths 1,1 --heads 2,2 --window 3 \
        --n-labels 3 --steps 5 --batch 16 --warmup 2 --eval-every 5
    for m in vit swin; do
        verb "classify/$m-idx" "$tf" classify --model "$work/$m" --data-dir "$d/img"
        verb "classify/$m-png" "$tf" classify --model "$work/$m" --top-k 2 "$d/diag.png"
    done
    verb eval/vit "$tf" eval --model "$work/vit" --data-dir "$d/img" --split train
    if verb classify/vit-attention "$tf" classify --model "$work/vit" --attention-png "$work/att" "$d/diag.png"; then
        fp classify/vit-attention/diag.png "$work/att/diag.png"
    fi
    # shellcheck disable=SC2086
    train imagegpt --data-dir "$d/img" --image-size 6 --n-clusters 8 --kmeans-iters 10 --context 37 $small \
        --steps 5 --batch 8 --warmup 2 --eval-every 5 --eval-batches 2
    if run complete-image/sampled "$tf" complete-image --model "$work/imagegpt" --input "$d/small.png" --keep-rows 2 \
        --samples 3 --seed 5 --out "$work/grid.png"; then fp complete-image/sampled/grid.png "$work/grid.png"; fi
    if run complete-image/greedy "$tf" complete-image --model "$work/imagegpt" --input "$d/small.png" --keep-rows 2 \
        --samples 2 --temperature 0 --out "$work/grid0.png"; then
        fp complete-image/greedy/grid.png "$work/grid0.png"
    fi
    # shellcheck disable=SC2086
    train vivit --data-dir "$d/img" --image-size 18 --object-size 6 --speed 2 --num-frames 4 --tubelet-t 2 \
        --tubelet-h 6 --tubelet-w 6 $small --n-layer-temporal 1 --labels direction --n-labels 4 --steps 5 --batch 8 \
        --warmup 2 --eval-every 5 --val-clips 16
    verb classify/vivit-clip "$tf" classify --model "$work/vivit" "$d/clip"

    # shellcheck disable=SC2086
    train continual --data "$d/computers" "$d/food" --steps 5 --batch 8 --lr 3e-3 --warmup 2 --eval-every 5 \
        --window 12 --pos-len 12 --d-model 16 --n-head 2 --d-ff 32 --n-layer 2
    verb stream/continual "<$d/stream.txt" "$tf" stream --model "$work/continual"
    verb stream/continual-recompute "<$d/stream.txt" "$tf" stream --model "$work/continual" --recompute
    # shellcheck disable=SC2086
    train listops --listops-min-len 10 --listops-max-len 40 --listops-depth 4 --listops-args 4 --context 40 $small \
        --batch 4 --steps 4 --eval-every 4 --eval-batches 1 --warmup 2
    verb eval/listops "$tf" eval --model "$work/listops" --listops 20
}

# Every committed hf-run and torch-run case folder: the output safetensors.
fixtures() {
    for c in "$root"/tests/fixtures*/*/config.json; do
        dir=${c%/config.json}
        [ -f "$dir/input.safetensors" ] || continue
        name=${dir#"$root/tests/"}
        if [ -f "$dir/model.safetensors" ]; then
            run "hf-run/$name" "$tf" hf-run --model "$dir" --input "$dir/input.safetensors" \
                --output "$work/hf-run/$name/o.safetensors" &&
                fp "hf-run/$name" "$work/hf-run/$name/o.safetensors"
        elif [ -f "$dir/weights.safetensors" ] && grep -q '"module"' "$c"; then # not tests/fixtures_heads' own
            run "torch-run/$name" "$tf" torch-run --config "$c" --weights "$dir/weights.safetensors" \
                --input "$dir/input.safetensors" --output "$work/torch-run/$name/o.safetensors" &&
                fp "torch-run/$name" "$work/torch-run/$name/o.safetensors"
        fi
    done
}

# record BIN OUTFILE THREADS...: every case under each thread count into OUTFILE.
record() {
    tf=$1 outfile=$2
    shift 2
    case $tf in /*) ;; *) tf=$(pwd)/$tf ;; esac
    [ -x "$tf" ] || die "$tf: not an executable"
    list=$tmp/list.$$ failed=0
    : >"$list"
    for threads in "$@"; do
        case $threads in '' | *[!0-9]*) die "threads '$threads': not a number" ;; esac
        work=$tmp/run
        { rm -rf "$work" && mkdir -p "$work" && ln -s "$data" "$work/data"; } || die "cannot write $work"
        TFORMER_THREADS=$threads
        export TFORMER_THREADS
        families
        fixtures
    done
    {
        echo "# tformer bit-identity fingerprints (tools/fingerprints.sh): <threads> <case> <sha256>"
        echo "# day: $(date -u +%Y-%m-%d)"
        echo "# cpu: $(grep -m1 '^model name' /proc/cpuinfo | sed 's/^[^:]*: *//')"
        "$tf" --version 2>&1 | head -n 8 | sed 's/^/# /'
        echo "# threads: $*"
        LC_ALL=C sort "$list"
    } >"$outfile.tmp" || die "cannot write $outfile.tmp"
    mv "$outfile.tmp" "$outfile" || die "cannot write $outfile"
    n=$(grep -cv '^#' "$outfile")
    echo "$me: $n fingerprints ($failed failed) -> $outfile" >&2
    [ "$failed" -eq 0 ]
}

# diff A B: "N equal, M differ" and the cases that differ (and those of one file only:
# other thread counts or workloads, the first 10 listed); 1 if any differ or failed.
diff_files() {
    for f in "$1" "$2"; do [ -r "$f" ] || die "cannot read $f"; done
    grep -v '^#' "$1" | awk '{ print $1 "|" $2, $3 }' | LC_ALL=C sort >"$tmp/a.key"
    grep -v '^#' "$2" | awk '{ print $1 "|" $2, $3 }' | LC_ALL=C sort >"$tmp/b.key"
    LC_ALL=C join -a1 -a2 -e ABSENT -o 0,1.2,2.2 "$tmp/a.key" "$tmp/b.key" >"$tmp/joined"
    awk -v a="$1" -v b="$2" '
        { split($1, k, "|"); name = "threads " k[1] " " k[2] }
        $2 == "ABSENT" || $3 == "ABSENT" {
            side = $2 == "ABSENT" ? b : a
            only[side]++
            if (only[side] <= 10) print "  only in " side ": " name
            next
        }
        $2 == $3 && $2 !~ /^FAILED|^MISSING/ { eq++; next }
        $2 == $3 { bad++; print "  both failed: " name " (" $2 ")"; next }
        { ne++; print "  differs: " name (($2 ~ /^[0-9a-f]+$/ && $3 ~ /^[0-9a-f]+$/) ? "" : " (" $2 " / " $3 ")") }
        END {
            printf "%d equal, %d differ", eq, ne
            if (bad) printf ", %d failed in both", bad
            if (only[a]) printf ", %d only in %s", only[a], a
            if (only[b]) printf ", %d only in %s", only[b], b
            printf "\n"
            exit (ne + bad > 0)
        }' "$tmp/joined"
}

tmp=$(mktemp -d /tmp/tformer_fingerprints_XXXXXX) || die "cannot make a temporary folder"
wt=
cleanup() {
    [ -n "$wt" ] && git -C "$root" worktree remove --force "$wt" >/dev/null 2>&1
    if [ -n "${FP_KEEP:-}" ]; then echo "$me: kept $tmp" >&2; else rm -rf "$tmp"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

[ $# -ge 1 ] || usage
case $1 in
--diff)
    [ $# -eq 3 ] || usage
    diff_files "$2" "$3"
    ;;
--compare)
    shift
    rev=
    # REV unless it is a thread count; an all-digit abbreviated hash (4 or more
    # digits, as 5654695) that names a commit is a REV too
    case ${1:-} in
    '') ;;
    *[!0-9]*) rev=$1 && shift ;;
    ????*) git -C "$root" rev-parse -q --verify "$1^{commit}" >/dev/null && rev=$1 && shift ;;
    esac
    [ -n "$rev" ] || rev=$(git -C "$root" merge-base HEAD main) || die "no merge-base of HEAD and main: give REV"
    [ $# -ge 1 ] || set -- 1 2
    sha=$(git -C "$root" rev-parse --verify "$rev^{commit}") || die "$rev: not a commit"
    data=$tmp/data
    make_data
    wt=$tmp/rev
    echo "$me: building $rev ($sha) in $wt" >&2
    git -C "$root" worktree add --detach "$wt" "$sha" >"$tmp/worktree.log" 2>&1 ||
        { cat "$tmp/worktree.log" >&2; die "cannot add a worktree of $rev"; }
    make -C "$wt" -j2 build/tformer >"$tmp/build-rev.log" 2>&1 ||
        { tail -n 30 "$tmp/build-rev.log" >&2; die "the build of $rev failed"; }
    echo "$me: building this tree ($root)" >&2
    make -C "$root" -j2 build/tformer >"$tmp/build-here.log" 2>&1 ||
        { tail -n 30 "$tmp/build-here.log" >&2; die "the build of this tree failed"; }
    cmp_rc=0
    record "$wt/build/tformer" "$tmp/before.txt" "$@" || cmp_rc=1
    record "$root/build/tformer" "$tmp/after.txt" "$@" || cmp_rc=1
    echo "$me: $rev ($(echo "$sha" | cut -c1-7)) against this tree:"
    diff_files "$tmp/before.txt" "$tmp/after.txt" || cmp_rc=1
    exit $cmp_rc
    ;;
-h | --help) usage ;;
-*) usage ;;
*)
    [ $# -ge 2 ] || usage
    bin=$1 out=$2
    shift 2
    [ $# -ge 1 ] || set -- 1 2
    case $out in /*) ;; *) out=$(pwd)/$out ;; esac
    data=$tmp/data
    make_data
    record "$bin" "$out" "$@" || exit 1
    ;;
esac
