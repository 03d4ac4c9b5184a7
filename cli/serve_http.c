/* The daemon of tformer serve: libmicrohttpd with a thread per connection, the limits
 * (body size, time to send a request, connections, idle connections), the API key, dispatch,
 * and a shutdown that finishes the requests in flight. */
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "serve.h"

/* What a connection's current request holds between the handler's calls. */
typedef struct {
    serve_endpoint ep;
    double start;
    char *body;
    size_t len, cap;
    int answered; /* a reply is queued: the rest of the upload is not read */
    int status;   /* the reply's, for the metrics (0: none sent) */
} request;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* ---------------------------------------------------------------- replies */

int serve_error(serve_reply *r, int status, const char *param, const char *code, const char *fmt, ...) {
    char msg[1536];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    const char *type = status == 401 ? "authentication_error"
                       : status == 404 ? "not_found_error"
                       : status >= 500 ? "server_error"
                                       : "invalid_request_error";
    cJSON *o = cJSON_CreateObject(), *e = cJSON_AddObjectToObject(o, "error");
    if (e) {
        cJSON_AddStringToObject(e, "message", msg);
        cJSON_AddStringToObject(e, "type", type);
        if (param) cJSON_AddStringToObject(e, "param", param);
        else cJSON_AddNullToObject(e, "param");
        if (code) cJSON_AddStringToObject(e, "code", code);
        else cJSON_AddNullToObject(e, "code");
    }
    serve_json(r, status, o);
    return -1;
}

int serve_json(serve_reply *r, int status, cJSON *obj) {
    free(r->body);
    r->body = obj ? cJSON_PrintUnformatted(obj) : NULL;
    r->status = r->body ? status : 500;
    r->type = NULL;
    cJSON_Delete(obj);
    return 0;
}

int serve_lib_error(serve_reply *r, int status, const tf_model *m, const char *code) {
    return serve_msg_error(r, status, m, code, tf_error());
}

int serve_msg_error(serve_reply *r, int status, const tf_model *m, const char *code, const char *msg) {
    const char *dir = m ? tf_model_dir(m) : NULL;
    size_t n = dir ? strlen(dir) : 0;
    if (n && !strncmp(msg, dir, n) && !strncmp(msg + n, ": ", 2)) msg += n + 2; /* the server's paths stay its own */
    return serve_error(r, status, NULL, code, "%s", msg);
}

static enum MHD_Result send_reply(struct MHD_Connection *c, request *q, serve_reply *r) {
    struct MHD_Response *resp = r->stream;
    if (!resp) {
        if (!r->body) r->status = 500, r->body = strdup("{\"error\":{\"message\":\"out of memory\",\"type\":"
                                                        "\"server_error\",\"param\":null,\"code\":null}}");
        if (!r->body) return MHD_NO;
        resp = MHD_create_response_from_buffer(strlen(r->body), r->body, MHD_RESPMEM_MUST_FREE);
        if (!resp) return free(r->body), MHD_NO;
        MHD_add_response_header(resp, "Content-Type", r->type ? r->type : "application/json");
    }
    q->answered = 1, q->status = r->status;
    enum MHD_Result ok = MHD_queue_response(c, (unsigned)r->status, resp);
    MHD_destroy_response(resp);
    return ok;
}

/* ---------------------------------------------------------------- checks before the body */

/* The key, compared in a time that depends on the key's length only. */
static int key_ok(const serve *s, struct MHD_Connection *c) {
    const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
    const char *key = s->o.api_key;
    if (!h || strncmp(h, "Bearer ", 7)) return 0;
    h += 7;
    size_t lk = strlen(key), lh = strlen(h);
    unsigned diff = lk != lh;
    for (size_t i = 0; i < lk; i++) diff |= (unsigned char)key[i] ^ (unsigned char)(i < lh ? h[i] : 0);
    return diff == 0;
}

/* 0, or an error reply before any body is read. */
static int early_check(serve *s, struct MHD_Connection *c, const request *q, const char *method, serve_reply *r) {
    int get = q->ep == EP_HEALTH || q->ep == EP_METRICS || q->ep == EP_MODELS || q->ep == EP_PAGE;
    if (s->stopping) return serve_error(r, 503, NULL, "shutting_down", "the server is shutting down"), -1;
    if (q->ep == EP_OTHER) return serve_error(r, 404, NULL, "unknown_url", "no endpoint here"), -1;
    if (strcmp(method, get ? "GET" : "POST"))
        return serve_error(r, 405, NULL, "method_not_allowed", "%s expects %s", serve_endpoint_name(q->ep),
                           get ? "GET" : "POST"), -1;
    if (q->ep != EP_HEALTH && q->ep != EP_PAGE && s->o.api_key && !key_ok(s, c)) /* the page asks for the key */
        return serve_error(r, 401, NULL, "invalid_api_key", "missing or wrong API key (Authorization: Bearer KEY)"), -1;
    const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
    if (cl) {
        char *end;
        errno = 0;
        unsigned long long n = strtoull(cl, &end, 10);
        if (errno || *end || n > s->o.max_body)
            return serve_error(r, 413, NULL, "body_too_large", "the body is over the limit of %zu bytes",
                               s->o.max_body), -1;
    }
    return 0;
}

/* The body's next bytes; 0, or -1 with a 413 (too large) or 408 (too slow) in r. */
static int take_body(serve *s, request *q, const char *data, size_t n, serve_reply *r) {
    if (now() - q->start > s->o.timeout)
        return serve_error(r, 408, NULL, "request_timeout", "the request took over %d s to send", s->o.timeout), -1;
    if (n > s->o.max_body - q->len)
        return serve_error(r, 413, NULL, "body_too_large", "the body is over the limit of %zu bytes", s->o.max_body), -1;
    if (q->len + n + 1 > q->cap) {
        size_t cap = q->cap ? q->cap : 4096;
        while (cap < q->len + n + 1) cap *= 2; /* bounded by max_body + 1 times 2 */
        char *b = realloc(q->body, cap);
        if (!b) return serve_error(r, 500, NULL, NULL, "out of memory"), -1;
        q->body = b, q->cap = cap;
    }
    memcpy(q->body + q->len, data, n);
    q->len += n;
    q->body[q->len] = 0;
    return 0;
}

/* ---------------------------------------------------------------- connections */

/* Every open connection is known (MHD_OPTION_NOTIFY_CONNECTION). One with no request under way
 * (a new one whose request's header is not in yet, a kept-alive one between requests) is on the
 * idle list, the longest idle first, and has MHD's timeout --header-timeout: a connection that
 * says nothing is closed after a few seconds. A request under way has --timeout.
 * libmicrohttpd admits --max-connections + 1: a connection that arrives when all --max-connections
 * are open closes the one idle longest and takes its place, so that connections opened and left
 * idle cannot keep real clients waiting (they queued in the listen backlog until the idle ones
 * timed out). Never closed for a newcomer: a request under way, a connection idle for less than
 * IDLE_GRACE (a client that just connected sends its request within it: a burst of real clients
 * must not close its own connections) or with bytes not read yet (its request is arriving). With
 * none to close, the newcomer is the one over, later ones wait in the backlog, and the reaper
 * closes the idle longest as soon as one may go. Closing is shutdown() of the socket: its thread
 * sees the end and libmicrohttpd closes it (as MHD_stop_daemon does); the socket is still open
 * then, since MHD_CONNECTION_NOTIFY_CLOSED, which takes the connection off the list under the same
 * mutex, comes before libmicrohttpd closes it. */
struct serve_conn {
    MHD_socket fd;
    double since; /* idle since (now()) */
    int idle, evicted;
    serve_conn *prev, *next;
};

static const double IDLE_GRACE = 0.5; /* seconds */

/* Off the idle list (under s->metrics.mu). */
static void idle_unlink(serve *s, serve_conn *k) {
    if (!k->idle) return;
    *(k->prev ? &k->prev->next : &s->idle_head) = k->next;
    *(k->next ? &k->next->prev : &s->idle_tail) = k->prev;
    k->prev = k->next = NULL, k->idle = 0;
    s->metrics.conns_idle--;
}

/* At the idle list's end, the latest idle (under s->metrics.mu). */
static void idle_push(serve *s, serve_conn *k) {
    if (k->idle || k->evicted) return;
    k->prev = s->idle_tail, k->next = NULL, k->since = now();
    *(s->idle_tail ? &s->idle_tail->next : &s->idle_head) = k;
    s->idle_tail = k, k->idle = 1;
    s->metrics.conns_idle++;
}

/* More than --max-connections open, not counting those already closed for a newcomer. */
static int over_limit(const serve *s) { return s->metrics.conns_open - s->conns_closing > s->o.max_connections; }

/* Close the connection idle longest that may go (under s->metrics.mu): idle for IDLE_GRACE, and
 * nothing unread (of the 16 idle longest); 0, or -1 when none may. */
static int evict_idle(serve *s) {
    double t = now();
    int n = 0;
    for (serve_conn *k = s->idle_head; k && n < 16 && t - k->since >= IDLE_GRACE; k = k->next, n++) {
        char b;
        if (recv(k->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) > 0) continue; /* its next request is arriving */
        idle_unlink(s, k);
        k->evicted = 1, s->conns_closing++;
        shutdown(k->fd, SHUT_RDWR);
        s->metrics.conns_evicted++;
        return 0;
    }
    return -1;
}

/* While over the limit, an idle connection closed as soon as one may go (every 100 ms). */
static void *reaper(void *arg) {
    serve *s = arg;
    pthread_mutex_lock(&s->metrics.mu);
    while (!s->reaper_stop) {
        if (!over_limit(s)) {
            pthread_cond_wait(&s->reaper_cv, &s->metrics.mu);
            continue;
        }
        evict_idle(s);
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        t.tv_nsec += 100000000L;
        if (t.tv_nsec >= 1000000000L) t.tv_sec++, t.tv_nsec -= 1000000000L;
        pthread_cond_timedwait(&s->reaper_cv, &s->metrics.mu, &t);
    }
    pthread_mutex_unlock(&s->metrics.mu);
    return NULL;
}

static int reaper_start(serve *s) {
    pthread_condattr_t a;
    pthread_condattr_init(&a);
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    int bad = pthread_cond_init(&s->reaper_cv, &a);
    pthread_condattr_destroy(&a);
    if (bad) return -1;
    if (!pthread_create(&s->reaper, NULL, reaper, s)) return 0;
    pthread_cond_destroy(&s->reaper_cv);
    return -1;
}

static void reaper_stop(serve *s) {
    pthread_mutex_lock(&s->metrics.mu);
    s->reaper_stop = 1;
    pthread_cond_signal(&s->reaper_cv);
    pthread_mutex_unlock(&s->metrics.mu);
    pthread_join(s->reaper, NULL);
    pthread_cond_destroy(&s->reaper_cv);
}

static void on_connection(void *cls, struct MHD_Connection *c, void **ctx, enum MHD_ConnectionNotificationCode code) {
    serve *s = cls;
    serve_conn *k = *ctx;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *i = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        if (!i || !(k = calloc(1, sizeof *k))) return; /* not known: never closed for a newcomer */
        k->fd = i->connect_fd, *ctx = k;
        pthread_mutex_lock(&s->metrics.mu);
        idle_push(s, k);
        s->metrics.conns_open++;
        if (over_limit(s) && evict_idle(s)) pthread_cond_signal(&s->reaper_cv); /* none may go yet */
        pthread_mutex_unlock(&s->metrics.mu);
        return;
    }
    if (!k) return;
    pthread_mutex_lock(&s->metrics.mu);
    idle_unlink(s, k);
    s->metrics.conns_open--, s->conns_closing -= k->evicted;
    pthread_mutex_unlock(&s->metrics.mu);
    free(k);
    *ctx = NULL;
}

/* A request begins on c (busy) or ends: off or onto the idle list, and MHD's timeout of the
 * connection to match (--timeout, or --header-timeout for the next request's header). */
static void conn_busy(serve *s, struct MHD_Connection *c, int busy) {
    const union MHD_ConnectionInfo *i = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    serve_conn *k = i ? i->socket_context : NULL;
    if (k) {
        pthread_mutex_lock(&s->metrics.mu);
        if (busy) idle_unlink(s, k);
        else idle_push(s, k);
        pthread_mutex_unlock(&s->metrics.mu);
    }
    MHD_set_connection_option(c, MHD_CONNECTION_OPTION_TIMEOUT, (unsigned)(busy ? s->o.timeout : s->o.header_timeout));
}

/* ---------------------------------------------------------------- the handler */

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *version, const char *upload, size_t *upload_size, void **ctx) {
    serve *s = cls;
    request *q = *ctx;
    serve_reply r = {0};
    (void)version;
    if (!q) {
        conn_busy(s, c, 1);
        if (!(q = calloc(1, sizeof *q))) return MHD_NO;
        q->ep = serve_endpoint_of(url), q->start = now();
        *ctx = q;
        pthread_mutex_lock(&s->metrics.mu);
        s->metrics.in_flight++;
        pthread_mutex_unlock(&s->metrics.mu);
        if (early_check(s, c, q, method, &r)) return send_reply(c, q, &r);
        return MHD_YES;
    }
    if (q->answered) return *upload_size = 0, MHD_YES; /* the rest of a refused body */
    if (*upload_size) {
        int bad = take_body(s, q, upload, *upload_size, &r);
        *upload_size = 0;
        return bad ? send_reply(c, q, &r) : MHD_YES;
    }
    serve_api(s, q->ep, method, q->body ? q->body : "", q->len, &r);
    return send_reply(c, q, &r);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **ctx, enum MHD_RequestTerminationCode why) {
    serve *s = cls;
    request *q = *ctx;
    if (why == MHD_REQUEST_TERMINATED_COMPLETED_OK) conn_busy(s, c, 0); /* else the connection closes */
    if (!q) return;
    if (q->status) serve_metrics_request(&s->metrics, q->ep, q->status, now() - q->start);
    pthread_mutex_lock(&s->metrics.mu);
    s->metrics.in_flight--;
    pthread_mutex_unlock(&s->metrics.mu);
    free(q->body);
    free(q);
    *ctx = NULL;
}

/* ---------------------------------------------------------------- start and stop */

serve *serve_start(const serve_opts *o, serve_model *models, int n_models, char *err, size_t n_err) {
    struct sockaddr_in a4 = {0};
    struct sockaddr_in6 a6 = {0};
    int v6 = strchr(o->host, ':') != NULL;
    if (v6 ? inet_pton(AF_INET6, o->host, &a6.sin6_addr) != 1 : inet_pton(AF_INET, o->host, &a4.sin_addr) != 1)
        return snprintf(err, n_err, "--host expects an IPv4 or IPv6 address, got '%s'", o->host), NULL;
    a4.sin_family = AF_INET, a4.sin_port = htons((uint16_t)o->port);
    a6.sin6_family = AF_INET6, a6.sin6_port = htons((uint16_t)o->port);
    serve *s = calloc(1, sizeof *s);
    if (!s) return snprintf(err, n_err, "out of memory"), NULL;
    s->o = *o, s->models = models, s->n_models = n_models, s->created = (long long)time(NULL);
    if (s->o.header_timeout > s->o.timeout) s->o.header_timeout = s->o.timeout;
    serve_metrics_init(&s->metrics);
    sem_init(&s->compute, 0, (unsigned)o->parallel);
    if (!(s->queues = serve_queues_new(n_models))) return snprintf(err, n_err, "out of memory"), free(s), NULL;
    if (!(s->scheds = serve_scheds_new(s))) {
        serve_queues_free(s->queues, n_models), free(s);
        return snprintf(err, n_err, "cannot start the completions' schedulers"), NULL;
    }
    if (reaper_start(s)) {
        serve_scheds_free(s), sem_destroy(&s->compute), serve_queues_free(s->queues, n_models), free(s);
        return snprintf(err, n_err, "cannot start a thread"), NULL;
    }
    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ITC |
                     (v6 ? MHD_USE_IPv6 : 0);
    s->d = MHD_start_daemon(flags, (uint16_t)o->port, NULL, NULL, on_request, s,
                            MHD_OPTION_SOCK_ADDR, v6 ? (struct sockaddr *)&a6 : (struct sockaddr *)&a4,
                            MHD_OPTION_CONNECTION_LIMIT, (unsigned)o->max_connections + 1, /* on_connection */
                            MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)s->o.header_timeout, /* a request: --timeout */
                            MHD_OPTION_NOTIFY_CONNECTION, on_connection, s,
                            MHD_OPTION_NOTIFY_COMPLETED, on_completed, s, MHD_OPTION_END);
    if (!s->d) {
        snprintf(err, n_err, "cannot listen on %s port %d: %s", o->host, o->port, errno ? strerror(errno) : "failed");
        reaper_stop(s);
        serve_scheds_free(s);
        sem_destroy(&s->compute);
        serve_queues_free(s->queues, n_models);
        free(s);
        return NULL;
    }
    return s;
}

int serve_port(const serve *s) {
    const union MHD_DaemonInfo *i = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);
    return i ? (int)i->port : -1;
}

void serve_quiesce(serve *s) {
    if (s->stopping) return;
    s->stopping = 1;
    s->listen_fd = MHD_quiesce_daemon(s->d); /* no new connections */
    /* and none left waiting: the socket stays open until MHD_stop_daemon (MHD's threads may still
     * hold it), but stops listening, so a client's connect is refused instead of hanging */
    if (s->listen_fd != MHD_INVALID_SOCKET) shutdown(s->listen_fd, SHUT_RDWR);
}

void serve_stop(serve *s) {
    serve_quiesce(s);
    MHD_socket fd = s->listen_fd;
    /* The requests in flight finish (a stream ends with its completion); bounded by the time
     * they may take: --timeout to send, then the model's work. */
    for (;;) {
        pthread_mutex_lock(&s->metrics.mu);
        int busy = s->metrics.in_flight;
        pthread_mutex_unlock(&s->metrics.mu);
        if (!busy) break;
        nanosleep(&(struct timespec){0, 20000000}, NULL);
    }
    MHD_stop_daemon(s->d);
    reaper_stop(s);
    if (fd != MHD_INVALID_SOCKET) close(fd);
    serve_scheds_free(s);
    sem_destroy(&s->compute);
    serve_queues_free(s->queues, s->n_models);
    free(s);
}

void serve_compute_begin(serve *s) {
    while (sem_wait(&s->compute) && errno == EINTR) {
    }
    pthread_mutex_lock(&s->metrics.mu);
    s->metrics.computing++;
    pthread_mutex_unlock(&s->metrics.mu);
}

void serve_compute_end(serve *s) {
    pthread_mutex_lock(&s->metrics.mu);
    s->metrics.computing--;
    pthread_mutex_unlock(&s->metrics.mu);
    sem_post(&s->compute);
}
