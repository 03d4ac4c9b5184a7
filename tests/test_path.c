/* tf_path_join (src/util/path.c): one slash between folder and name whatever slashes the folder ends with,
 * and a path that does not fit is an error, never a shorter path. */
#include <string.h>

#include "test.h"
#include "util/util.h"

/* dir + name joined into a buffer of n bytes equals want (NULL: refused, out left ""). */
static int joins(const char *dir, const char *name, size_t n, const char *want) {
    char out[64];
    memset(out, 'x', sizeof out);
    int rc = tf_path_join(out, n, dir, name);
    if (!want) return rc == -1 && (n == 0 || out[0] == 0) && strstr(tf_error(), "path too long");
    return rc == 0 && !strcmp(out, want);
}

TEST(path_join_one_slash_whatever_the_folder_ends_with) {
    CHECK(joins("run", "config.json", 64, "run/config.json"));
    CHECK(joins("run/", "config.json", 64, "run/config.json"));
    CHECK(joins("run///", "config.json", 64, "run/config.json"));
    CHECK(joins("a/b/", "c", 64, "a/b/c"));
    CHECK(joins("run", "/config.json", 64, "run/config.json"));
    CHECK(joins("/", "etc", 64, "/etc"));
    CHECK(joins("//", "etc", 64, "/etc"));
    CHECK(joins("", "name", 64, "name"));
    CHECK(joins(".", "name", 64, "./name"));
}

TEST(path_join_refuses_what_does_not_fit) {
    /* "run/config.json" is 15 bytes and its NUL: 16 fit, 15 do not */
    CHECK(joins("run//", "config.json", 16, "run/config.json"));
    CHECK(joins("run//", "config.json", 15, NULL));
    CHECK(joins("run", "c", 6, "run/c"));
    CHECK(joins("run", "c", 5, NULL));
    CHECK(joins("run", "", 4, NULL)); /* "run/" and its NUL: 5 */
    CHECK(joins("run", "", 5, "run/"));
    CHECK(joins("run", "c", 0, NULL));
    CHECK(joins("/", "e", 3, "/e"));
    CHECK(joins("/", "e", 2, NULL));
    /* the same buffer as folder: the name goes after it */
    char buf[16] = "run/";
    CHECK(tf_path_join(buf, sizeof buf, buf, "best") == 0 && !strcmp(buf, "run/best"));
    char small[8] = "run/";
    CHECK(tf_path_join(small, sizeof small, small, "toolong") == -1 && small[0] == 0);
}
