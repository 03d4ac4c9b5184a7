/* Paths made of a folder and a name. A folder comes as the user typed it
 * ("run", "run/", "run//", "/"), so the join cuts the folder's trailing
 * slashes rather than trusting every caller to have done so, and it refuses
 * a path that does not fit rather than cutting it short: a truncated name
 * would open, or worse replace, another file. */
#include <stdint.h>
#include <string.h>

#include "util.h"

int tf_path_join(char *out, size_t n, const char *dir, const char *name) {
    size_t d = strlen(dir), k;
    while (d > 1 && dir[d - 1] == '/') d--; /* "/" keeps its one slash: the root */
    while (*name == '/') name++;
    k = strlen(name);
    int slash = d > 0 && dir[d - 1] != '/'; /* "" + name is name; "/" + name is /name */
    /* d + slash + k + 1 <= n, each step checked so that no sum wraps */
    if (n == 0 || d > n - 1 || (size_t)slash > n - 1 - d || k > n - 1 - d - (size_t)slash) {
        tf_set_error("%.*s/%s: path too long (%zu bytes at most)", (int)(d < 512 ? d : 512), dir, name, n ? n - 1 : 0);
        if (n) out[0] = 0; /* after the message: out may be dir */
        return -1;
    }
    memmove(out, dir, d); /* out may be dir itself */
    if (slash) out[d++] = '/';
    memmove(out + d, name, k + 1);
    return 0;
}
