#!/usr/bin/env python3
"""The library's layering, checked on its #include lines (make layers; make test runs it).

Every source file and header of src/, cli/ and include/ belongs to one module of
the map below, and every public header include/tformer/<x>.h too. A file may
include a header of its own module or of a module of a lower layer; a header
of a higher layer, or of another module of the same layer, is an error reported
as file:line; so is an include of an umbrella header (tformer.h, train.h) from
src/. A file or a public header the map does not place is an error too
(a new folder or header gets its line here). Only quoted includes are read; a
private header is found beside the including file, a public one under include/.

    python3 tools/check_layers.py [ROOT]     (exit status 1 on any error)
"""
import os
import re
import sys

# The map, lowest layer first: (layer, module, source folders, public headers).
# Modules of one layer are independent of each other (tokenizer and metrics,
# data and generate). The model families are one module: a family may build
# on another's header (Swin on ViT's). The task interface (task.h) and the
# processes (dist.h) sit below the families, which implement their tasks; so do
# the optimizers, the schedules and the trainer's settings (their code is the
# trainer's, src/train), which a family's registry row adjusts (model.h). The
# registry and the model handle (model.h) are the families'; so is interop.h
# (tf_hf_run runs any family through the registry, src/models/hf_run.c;
# tf_torch_run, src/interop, builds on the families).
LAYERS = [
    (0, 'core', ['src/core', 'src/util'], ['core.h', 'config.h']),
    (1, 'ops', ['src/ops'], ['ops.h']),
    (2, 'io', ['src/io'], ['safetensors.h', 'plot.h']),
    (3, 'nn', ['src/nn'], ['nn.h', 'heads.h']),
    (4, 'tokenizer', ['src/tokenizer'], ['tokenizer.h']),
    (4, 'metrics', ['src/metrics'], ['metrics.h']),
    (5, 'data', ['src/data'], ['data.h', 'images.h']),
    (5, 'generate', ['src/generate'], ['generate.h']),
    (6, 'task', ['src/task'], ['task.h', 'dist.h']),
    (6, 'optim', [], ['optim.h', 'schedule.h', 'train_config.h']),
    # a family's public header is named after its folder (src/models/<family>/ -> <family>.h): found, not listed
    (7, 'models', ['src/models'], ['model.h', 'interop.h', 'FAMILY_FOLDERS']),
    (8, 'interop', ['src/interop'], []),
    (9, 'train', ['src/train'], ['trainer.h', 'train.h']),
    (10, 'cli', ['cli'], ['../tformer.h']),  # the umbrella include/tformer.h: for programs, never the library
]

# Umbrellas for programs (every header of a part at once): the library (src/) includes the
# narrow headers, never these.
UMBRELLAS = {'include/tformer.h', 'include/tformer/train.h'}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def family_headers(root):
    """<family>.h for every folder src/models/<family>/."""
    top = os.path.join(root, 'src', 'models')
    return [d + '.h' for d in sorted(os.listdir(top)) if os.path.isdir(os.path.join(top, d))]


def module_of(path, root='.'):
    """(layer, module) of a file (relative to the root), or None."""
    p = path.replace(os.sep, '/')
    for layer, name, dirs, headers in LAYERS:
        if 'FAMILY_FOLDERS' in headers:
            headers = [h for h in headers if h != 'FAMILY_FOLDERS'] + family_headers(root)
        if any(p.startswith(d + '/') for d in dirs):
            return layer, name
        if p.startswith('include/') and os.path.relpath(p, 'include/tformer').replace(os.sep, '/') in headers:
            return layer, name
    return None


def files(root):
    for top in ('src', 'cli', 'include'):
        for d, _, names in os.walk(os.path.join(root, top)):
            for n in sorted(names):
                if n.endswith(('.c', '.h')):
                    yield os.path.relpath(os.path.join(d, n), root).replace(os.sep, '/')


def resolve(root, path, inc):
    """The included file relative to root: beside the includer, then under include/."""
    for base in (os.path.dirname(path), 'include'):
        p = os.path.normpath(os.path.join(base, inc))
        if os.path.isfile(os.path.join(root, p)):
            return p.replace(os.sep, '/')
    return None


def check(root):
    errors = []
    names = {l[1]: l[0] for l in LAYERS}
    for path in sorted(files(root)):
        mine = module_of(path, root)
        if mine is None:
            errors.append('%s:1: not in the layer map (tools/check_layers.py)' % path)
            continue
        with open(os.path.join(root, path), encoding='utf-8', errors='replace') as f:
            for no, line in enumerate(f, 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                target = resolve(root, path, m.group(1))
                if target is None:
                    errors.append('%s:%d: "%s" not found beside the file or under include/' % (path, no, m.group(1)))
                    continue
                theirs = module_of(target, root)
                if target in UMBRELLAS and path.startswith('src/'):
                    errors.append('%s:%d: includes the umbrella %s: the library includes the narrow headers'
                                  % (path, no, target))
                elif theirs is None:
                    errors.append('%s:%d: %s is not in the layer map' % (path, no, target))
                elif theirs[1] != mine[1] and theirs[0] >= mine[0]:
                    how = 'a higher layer' if theirs[0] > mine[0] else 'another module of its layer'
                    errors.append('%s:%d: %s (%s, layer %d) includes %s of %s (%s, layer %d)'
                                  % (path, no, path, mine[1], mine[0], target, how, theirs[1], theirs[0]))
    assert len(names) == len(LAYERS), 'a module named twice in LAYERS'
    return errors


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else '.'
    errors = check(root)
    for e in errors:
        print(e)
    if errors:
        print('layers: %d include(s) against the layering (tools/check_layers.py)' % len(errors))
        return 1
    print('layers: every include of src/, cli/ and include/ goes down the layers')
    return 0


if __name__ == '__main__':
    sys.exit(main())
