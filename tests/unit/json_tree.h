/* A JSON parser into a small tree, for tests that read what pipesim
 * writes as JSON (test_export.c's Chrome trace): parse_doc says whether a
 * document is valid JSON and builds its tree (strings keep \u escapes
 * below 0x80 only, all the exporter writes), and get, num and str read
 * it. Header-only, as the other test helpers are: each test is one
 * program. */
#ifndef PS_TEST_JSON_TREE_H
#define PS_TEST_JSON_TREE_H

#include <stdlib.h>
#include <string.h>

enum { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ };

typedef struct jv {
    int type;
    double num;
    char *str;        /* J_STR */
    struct jv *items; /* J_ARR, J_OBJ values */
    char **keys;      /* J_OBJ */
    int n;
} jv;

typedef struct jp {
    const char *p;
    int depth;
} jp;

static void jv_free(jv *v)
{
    for (int i = 0; i < v->n; i++) {
        jv_free(&v->items[i]);
        if (v->keys)
            free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
    free(v->str);
}

static void ws(jp *s)
{
    while (*s->p == ' ' || *s->p == '\n' || *s->p == '\r' || *s->p == '\t')
        s->p++;
}

static int hexval(char c)
{
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

/* Parses a string into a new buffer (\u escapes below 0x80 only, which is
 * all the exporter writes; others become '?'). */
static char *parse_str(jp *s)
{
    if (*s->p != '"')
        return NULL;
    s->p++;
    size_t cap = 16, n = 0;
    char *out = malloc(cap);
    for (; *s->p != '"'; s->p++) {
        char c = *s->p;
        if ((unsigned char)c < 0x20) {
            free(out);
            return NULL;
        }
        if (c == '\\') {
            c = *++s->p;
            switch (c) {
            case '"':
            case '\\':
            case '/': break;
            case 'n': c = '\n'; break;
            case 't': c = '\t'; break;
            case 'r': c = '\r'; break;
            case 'b': c = '\b'; break;
            case 'f': c = '\f'; break;
            case 'u': {
                int v = 0;
                for (int i = 1; i <= 4; i++) {
                    int h = hexval(s->p[i]);
                    if (h < 0) {
                        free(out);
                        return NULL;
                    }
                    v = v * 16 + h;
                }
                s->p += 4;
                c = v < 0x80 ? (char)v : '?';
                break;
            }
            default: free(out); return NULL;
            }
        }
        if (n + 2 > cap)
            out = realloc(out, cap *= 2);
        out[n++] = c;
    }
    s->p++;
    out[n] = '\0';
    return out;
}

static int parse_value(jp *s, jv *v)
{
    memset(v, 0, sizeof *v);
    ws(s);
    if (++s->depth > 100)
        return -1;
    int rc = 0;
    if (*s->p == '{' || *s->p == '[') {
        int obj = *s->p == '{';
        char close = obj ? '}' : ']';
        v->type = obj ? J_OBJ : J_ARR;
        s->p++;
        ws(s);
        int cap = 0;
        if (*s->p == close) {
            s->p++;
        } else {
            for (;;) {
                if (v->n == cap) {
                    cap = cap ? 2 * cap : 8;
                    v->items =
                        realloc(v->items, (size_t)cap * sizeof *v->items);
                    if (obj)
                        v->keys =
                            realloc(v->keys, (size_t)cap * sizeof(char *));
                }
                if (obj) {
                    ws(s);
                    char *k = parse_str(s);
                    if (!k)
                        return -1;
                    v->keys[v->n] = k;
                    ws(s);
                    if (*s->p++ != ':') {
                        memset(&v->items[v->n], 0, sizeof *v->items);
                        v->n++;
                        return -1;
                    }
                }
                rc = parse_value(s, &v->items[v->n]);
                v->n++;
                if (rc)
                    return -1;
                ws(s);
                if (*s->p == close) {
                    s->p++;
                    break;
                }
                if (*s->p++ != ',')
                    return -1;
            }
        }
    } else if (*s->p == '"') {
        v->type = J_STR;
        if (!(v->str = parse_str(s)))
            return -1;
    } else if (strncmp(s->p, "true", 4) == 0 ||
               strncmp(s->p, "false", 5) == 0) {
        v->type = J_BOOL;
        v->num = *s->p == 't';
        s->p += *s->p == 't' ? 4 : 5;
    } else if (strncmp(s->p, "null", 4) == 0) {
        v->type = J_NULL;
        s->p += 4;
    } else {
        /* JSON's number grammar: no leading zeros, no '+', digits after
         * '.', no NaN or Infinity */
        const char *p = s->p;
        if (*p == '-')
            p++;
        if (*p == '0')
            p++;
        else if (*p >= '1' && *p <= '9')
            while (*p >= '0' && *p <= '9')
                p++;
        else
            return -1;
        if (*p == '.') {
            if (!(*++p >= '0' && *p <= '9'))
                return -1;
            while (*p >= '0' && *p <= '9')
                p++;
        }
        if (*p == 'e' || *p == 'E') {
            p++;
            if (*p == '+' || *p == '-')
                p++;
            if (!(*p >= '0' && *p <= '9'))
                return -1;
            while (*p >= '0' && *p <= '9')
                p++;
        }
        v->type = J_NUM;
        v->num = strtod(s->p, NULL);
        s->p = p;
    }
    s->depth--;
    return rc;
}

/* Parses a whole document; 0 when it is valid JSON. */
static int parse_doc(const char *text, jv *v)
{
    jp s = {text, 0};
    if (parse_value(&s, v))
        return -1;
    ws(&s);
    return *s.p ? -1 : 0;
}

static const jv *get(const jv *o, const char *key)
{
    if (!o || o->type != J_OBJ)
        return NULL;
    for (int i = 0; i < o->n; i++)
        if (strcmp(o->keys[i], key) == 0)
            return &o->items[i];
    return NULL;
}

static double num(const jv *o, const char *key)
{
    const jv *v = get(o, key);
    return v && v->type == J_NUM ? v->num : NAN;
}

static const char *str(const jv *o, const char *key)
{
    const jv *v = get(o, key);
    return v && v->type == J_STR ? v->str : "";
}

#endif
