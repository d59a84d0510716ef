/* jsonpush.c - the push decoder of /v1 JSON bodies (jsonpush.h).
 *
 * Why: api_json_decode() needs the whole body in memory; for a large body
 * the text is most of a request's peak memory, and reading it only after
 * the upload leaves the CPU idle while the bytes arrive.  This decoder is
 * fed as the body arrives and keeps only what jansson must still see.
 *
 * How (the same split as jsonfast.c, incrementally):
 *   HEAD   the text is kept while a walk (find_open() of jsonfast.c, one
 *          byte at a time) looks for the '[' of root.input.data, noting
 *          the string value of root.input.dtype written before it;
 *   ARRAY  with that dtype known (not bool), each complete element is
 *          read by jsonfast.c's parser (jf_fill_narrow(), jf_read(),
 *          jf_exact(): the bits api_json_decode() gives) straight into the
 *          typed buffer; a chunk's last, incomplete element waits in
 *          `pend` for the next chunk.  Of the text only counts are kept:
 *          bytes, elements and newlines (struct jp_region);
 *   TAIL   after the array's ']' the text is kept again; at the end
 *          jansson parses head + "[]" + tail and json.c decodes it with
 *          the elements already converted (api__json_decode_pushed()).
 * Anything else -- an element the fast conversion does not take (a
 * string, a nested list, an integer out of range, a syntax error), no
 * dtype before the array, a document the cut does not parse -- keeps the
 * rest of the text (KEEP, WHOLE), and at the end api_json_decode() runs on
 * the body rebuilt with each element already converted written as "0"
 * padded with spaces to the same bytes, lines and columns (jp_zeros()):
 * the same error, at the same line and column, as the original body (the
 * zeros were valid numbers where valid numbers were, and no message
 * quotes an element that converted); on success the first elements are
 * then the ones converted here.
 */
#include "jsonpush.h"

#include <stdlib.h>
#include <string.h>

#include "jsonconv.h"
#include "jsonfast.h"
#include "mem.h"
#include "tmem.h"

/* A chunked body's element buffer starts with room for this many. */
#define JP_START_ELEMS 65536u
/* HEAD appends the text in steps of this many bytes (head_feed()). */
#define JP_HEAD_STEP 4096u

enum jp_mode {
  JP_HEAD,  /* looking for root.input.data's '[' */
  JP_WHOLE, /* not found or not taken: all the text is kept */
  JP_ARRAY, /* converting elements */
  JP_TAIL,  /* after the array's ']' */
  JP_KEEP   /* an element not taken: the rest of the text is kept */
};

/* What the rebuilt body needs of the converted elements' text (after the
 * '['): its bytes, its newlines, and where the last newline fell. */
struct jp_region {
  uint64_t len; /* bytes, through the separator after the last element */
  uint64_t nl;  /* of them '\n' */
  uint64_t c;   /* bytes after the last '\n' (all if none) */
  uint64_t s1;  /* separators before the last '\n' */
  uint64_t t1;  /* element tokens begun before it (s1 or s1 + 1) */
};

struct api_jpush {
  enum jp_mode mode;
  int nomem;
  int locale_ok;       /* strtod() reads '.' (jf_exact() needs it) */
  size_t len_hint;     /* the body's length, 0 if unknown */
  struct api_buf text; /* the body (HEAD, WHOLE), else through the '[' */
  struct api_buf pend; /* ARRAY: bytes after the last separator */
  struct api_buf tail; /* TAIL: after ']'; KEEP: from the element not taken */
  size_t open;         /* offset of the '[' in text */
  int closed;          /* the region ends with the array's ']' */

  /* The head walk (find_open() in jsonfast.c), over text. */
  int in_str, esc, str_esc;
  size_t cur_str, str_off, str_len; /* the last string's text */
  int has_str;
  int depth;
  char kind[3];
  int has_key[3];
  size_t key_off[3], key_len[3];
  char last_sig; /* the last byte outside strings that is not space */
  int dt_ok;     /* root.input.dtype's value seen, without escapes */
  size_t dt_off, dt_len;

  /* The elements. */
  int dtype, narrow, is_float;
  size_t esize;
  uint64_t max_neg, max_pos;
  unsigned char *out;
  uint64_t cap, k;
  size_t ready; /* bytes of out with resident pages (mem.h) */
  struct jp_region reg;
};

static int is_ws(char c)
{
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static void put(struct api_jpush *p, struct api_buf *b, const char *s, size_t n)
{
  if (n > 0 && !p->nomem && api_buf_append(b, s, n) != 0)
    p->nomem = 1;
}

int api_jpush_create(size_t len_hint, struct api_jpush **out)
{
  struct api_jpush *p = calloc(1, sizeof *p);
  char *end;

  *out = NULL;
  if (p == NULL)
    return RD_E_NOMEM;
  api_buf_init(&p->text);
  api_buf_init(&p->pend);
  api_buf_init(&p->tail);
  p->mode = JP_HEAD;
  p->len_hint = len_hint;
  /* jf_exact() falls back to strtod(), which reads the C library's
   * locale: if that is not '.', every element is left to jansson. */
  p->locale_ok = strtod("0.5", &end) == 0.5 && *end == '\0';
  *out = p;
  return 0;
}

uint64_t api_jpush_taken(const struct api_jpush *p)
{
  return p->k;
}

void api_jpush_destroy(struct api_jpush *p)
{
  if (p == NULL)
    return;
  api_buf_free(&p->text);
  api_buf_free(&p->pend);
  api_buf_free(&p->tail);
  api_tmem_free(p->out);
  free(p);
}

/* ------------------------------------------------------------------ */
/* HEAD                                                               */
/* ------------------------------------------------------------------ */

static int key_is(const struct api_jpush *p, int d, const char *want)
{
  return p->has_key[d] && p->key_len[d] == strlen(want) &&
         memcmp(p->text.data + p->key_off[d], want, p->key_len[d]) == 0;
}

/* In the object root.input, at its own level. */
static int in_input(const struct api_jpush *p)
{
  return p->depth == 2 && p->kind[1] == '{' && p->kind[2] == '{' &&
         key_is(p, 1, "input");
}

/* One byte of the walk at text offset `o`: 1 at root.input.data's '[', -1
 * when the walk cannot find it (as find_open()), else 0. */
static int head_byte(struct api_jpush *p, char c, size_t o)
{
  if (p->in_str) {
    if (p->esc) {
      p->esc = 0;
    } else if (c == '\\') {
      p->esc = p->str_esc = 1;
    } else if (c == '"') {
      p->in_str = 0;
      p->has_str = 1;
      p->str_off = p->cur_str;
      p->str_len = o - p->cur_str;
      if (p->last_sig == ':' && in_input(p) && key_is(p, 2, "dtype")) {
        /* A later "dtype" overrides (duplicates are jansson's error). */
        p->dt_ok = !p->str_esc;
        p->dt_off = p->str_off;
        p->dt_len = p->str_len;
      }
      p->last_sig = '"';
    }
    return 0;
  }
  switch (c) {
  case '"':
    p->in_str = 1;
    p->str_esc = 0;
    p->cur_str = o + 1;
    return 0;
  case ':':
    if (p->depth >= 1 && p->depth <= 2) {
      p->has_key[p->depth] = p->has_str;
      p->key_off[p->depth] = p->str_off;
      p->key_len[p->depth] = p->str_len;
    }
    break;
  case '[':
    if (in_input(p) && key_is(p, 2, "data"))
      return 1;
    /* fall through */
  case '{':
    if (++p->depth <= 2) {
      p->kind[p->depth] = c;
      p->has_key[p->depth] = 0;
    }
    break;
  case '}':
  case ']':
    if (--p->depth < 0)
      return -1;
    break;
  default:
    if (is_ws(c))
      return 0;
  }
  p->last_sig = c;
  return 0;
}

/* At the '[': takes the array if the dtype before it is one whose
 * elements are numbers, and allocates the element buffer.  0: not. */
static int start_array(struct api_jpush *p)
{
  enum rd_dtype dt;
  char name[32];
  uint64_t cap;

  if (!p->dt_ok || p->dt_len >= sizeof name || !p->locale_ok)
    return 0;
  memcpy(name, p->text.data + p->dt_off, p->dt_len);
  name[p->dt_len] = '\0';
  if (rd_dtype_parse(name, &dt) != 0 || dt == RD_BOOL)
    return 0; /* bool takes true/false only: jansson's path */
  p->dtype = dt;
  p->esize = rd_dtype_size(dt);
  p->is_float = api__is_float(dt);
  p->narrow = p->is_float && dt != RD_FLOAT64;
  if (!p->is_float)
    api__int_range(dt, &p->max_neg, &p->max_pos);
  /* A known length bounds the elements ("0," each): one allocation whose
   * untouched pages cost nothing (as jsonfast.c's). */
  cap = p->len_hint > 0 ? (uint64_t)p->len_hint / 2 + 2 : JP_START_ELEMS;
  if (cap > SIZE_MAX / 8 ||
      (p->out = api_tmem_alloc((size_t)cap * p->esize)) == NULL) {
    cap = JP_START_ELEMS;
    if ((p->out = api_tmem_alloc((size_t)cap * p->esize)) == NULL) {
      p->nomem = 1;
      return 0;
    }
  }
  p->cap = cap;
  return 1;
}

/* ------------------------------------------------------------------ */
/* ARRAY                                                              */
/* ------------------------------------------------------------------ */

/* Room for `extra` more elements.  0 or -1 (out of memory). */
static int reserve(struct api_jpush *p, uint64_t extra)
{
  uint64_t want = p->k + extra, cap = p->cap;
  unsigned char *q;

  if (want <= cap)
    return 0;
  while (cap < want)
    cap *= 2;
  if (cap > SIZE_MAX / 8 ||
      (q = api_tmem_realloc(p->out, (size_t)cap * p->esize)) == NULL) {
    p->nomem = 1;
    return -1;
  }
  p->out = q;
  p->cap = cap;
  p->ready = (size_t)p->k * p->esize; /* the pages past the copy are new */
  return 0;
}

/* The element index the writer may go up to with resident pages (mem.h:
 * the parser writes the buffer front to back), > p->k while p->k < p->cap. */
static uint64_t populate(struct api_jpush *p)
{
  api_mem_ahead(p->out, (size_t)p->cap * p->esize, &p->ready,
                (size_t)p->k * p->esize, p->esize);
  return p->ready / p->esize;
}

/* Converts the elements from s[*pos] on into the buffer, s[end] being a
 * ']' (the array's, or one written over a ','): 1 when every element up
 * to the one before s[end] was taken; 0 at the first one that is not
 * (syntax, or a value the fast conversion leaves to jansson), *pos then
 * at its start (just after the separator before it).  The branches are
 * json.c's fill_flat() without its put_elem() cases. */
static int take_run(struct api_jpush *p, const char *s, size_t end, size_t *pos)
{
  struct jf_num n;
  size_t start = *pos, at;
  int last = 0, rc;
  double d;

  if (p->narrow) {
    for (;;) {
      uint64_t lim = populate(p);
      rc = jf_fill_narrow(s, end, pos, p->dtype, p->out, lim, &p->k, &n, &last);
      if (rc < 0 && p->k == lim && lim < p->cap)
        continue; /* at the resident pages' end, not the buffer's */
      if (rc <= 0)
        return rc == 0;
      /* Undecided by the fast conversion: exactly. */
      if (jf_exact(&n, &d) != 0) {
        at = (size_t)(n.tok - s);
        while (at > start && is_ws(s[at - 1]))
          at--;
        *pos = at;
        return 0;
      }
      api__store_float(p->dtype, d, p->out + p->k * p->esize);
      p->k++;
      if (last)
        return 1;
    }
  }
  while (!last) {
    unsigned char *dst = p->out + p->k * p->esize;
    at = *pos;
    if ((size_t)p->k * p->esize >= p->ready)
      (void)populate(p);
    if (p->k == p->cap || jf_read(s, end, pos, &n, &last) != 0) {
      *pos = at;
      return 0;
    }
    if (p->is_float) {
      if (jf_exact(&n, &d) != 0) {
        *pos = at;
        return 0;
      }
      api__store_float(p->dtype, d, dst);
    } else if (n.kind == JF_INT &&
               (n.i >= 0 ? (uint64_t)n.i <= p->max_pos
                         : (uint64_t)0 - (uint64_t)n.i <= p->max_neg)) {
      api__store_int(p->dtype, n.i < 0,
                     n.i < 0 ? (uint64_t)0 - (uint64_t)n.i : (uint64_t)n.i,
                     dst);
    } else {
      *pos = at; /* a real, or out of range: put_elem()'s, jansson's */
      return 0;
    }
    p->k++;
  }
  return 1;
}

/* The text s[0..n) of converted elements (ending just after a separator;
 * `kb` elements came before it) joins the region. */
static void account(struct api_jpush *p, const char *s, size_t n, uint64_t kb)
{
  struct jp_region *r = &p->reg;
  size_t i, last = 0, at;
  uint64_t seps = 0;

  r->len += n;
  if (n == 0 || memchr(s, '\n', n) == NULL) {
    r->c += n; /* the common case: no newline */
    return;
  }
  for (i = 0; i < n; i++)
    if (s[i] == '\n') {
      r->nl++;
      last = i;
    }
  for (i = 0; i < last; i++)
    seps += s[i] == ',' || s[i] == ']';
  r->s1 = kb + seps;
  /* Does a token end before the newline and its separator come after? */
  at = last;
  while (at > 0 && is_ws(s[at - 1]))
    at--;
  r->t1 = r->s1 + (at > 0 && s[at - 1] != ',' && s[at - 1] != ']');
  r->c = n - last - 1;
}

/* Gives up converting at s[0..n) (the element not taken and what follows
 * in this chunk): from here the text is kept. */
static void keep_rest(struct api_jpush *p, const char *s, size_t n)
{
  p->mode = JP_KEEP;
  put(p, &p->tail, s, n);
}

/* The array ended at d[0] == ']' was consumed; the rest is the tail. */
static void array_closed(struct api_jpush *p, const char *s, size_t n)
{
  p->closed = 1;
  p->mode = JP_TAIL;
  put(p, &p->tail, s, n);
}

static void array_feed(struct api_jpush *p, char *d, size_t n)
{
  size_t i = 0, j, end, pos;
  uint64_t kb;
  char *rb, sep;
  int ok, closed;

  if (p->pend.len > 0) {
    /* The element cut by the last chunk ends at the first separator. */
    for (j = 0; j < n && d[j] != ',' && d[j] != ']'; j++)
      ;
    if (j == n) {
      put(p, &p->pend, d, n);
      return;
    }
    put(p, &p->pend, d, j + 1);
    if (p->nomem || reserve(p, 1) != 0)
      return;
    end = p->pend.len - 1;
    sep = p->pend.data[end];
    p->pend.data[end] = ']';
    pos = 0;
    kb = p->k;
    ok = take_run(p, p->pend.data, end, &pos);
    p->pend.data[end] = sep;
    if (!ok) {
      keep_rest(p, p->pend.data, p->pend.len);
      put(p, &p->tail, d + j + 1, n - j - 1);
      p->pend.len = 0;
      return;
    }
    account(p, p->pend.data, p->pend.len, kb);
    p->pend.len = 0;
    if (sep == ']') {
      array_closed(p, d + j + 1, n - j - 1);
      return;
    }
    i = j + 1;
  }
  /* The complete elements: up to the array's ']' if it is here, else up
   * to the last ','; a ']' or ',' in a string only ends the run early
   * (the string is not a number: the reading stops before it). */
  rb = i < n ? memchr(d + i, ']', n - i) : NULL;
  if (rb != NULL) {
    end = (size_t)(rb - d);
    closed = 1;
  } else {
    for (end = n; end > i && d[end - 1] != ','; end--)
      ;
    if (end == i) {
      put(p, &p->pend, d + i, n - i);
      return;
    }
    end--;
    closed = 0;
  }
  /* At most one element per two bytes ("0,"). */
  if (reserve(p, (end - i + 2) / 2 + 1) != 0)
    return;
  sep = d[end];
  d[end] = ']';
  pos = i;
  kb = p->k;
  ok = take_run(p, d, end, &pos);
  d[end] = sep;
  if (!ok) {
    account(p, d + i, pos - i, kb);
    keep_rest(p, d + pos, n - pos);
    return;
  }
  account(p, d + i, end + 1 - i, kb);
  if (closed)
    array_closed(p, d + end + 1, n - end - 1);
  else
    put(p, &p->pend, d + end + 1, n - end - 1);
}

static void head_feed(struct api_jpush *p, char *d, size_t n)
{
  size_t base = p->text.len, i = 0, put_end = 0, step;
  int r = 0;

  /* Each byte is appended before it is walked (the walk compares keys in
   * the text), JP_HEAD_STEP bytes at a time: appending the whole chunk
   * would copy the elements after the '[' too, and leave a text buffer
   * twice the chunk (256 KiB for the 128 KiB buffers of post.c), half of
   * it touched, held for the whole request. */
  while (i < n && r == 0) {
    step = n - put_end < JP_HEAD_STEP ? n - put_end : JP_HEAD_STEP;
    put(p, &p->text, d + put_end, step);
    if (p->nomem)
      return;
    put_end += step;
    for (; i < put_end && r == 0; i++)
      r = head_byte(p, d[i], base + i);
  }
  if (r < 0) {
    put(p, &p->text, d + put_end, n - put_end);
    p->mode = JP_WHOLE;
    return;
  }
  if (r == 0)
    return;
  /* d[i - 1] is the '[': the text ends with it, the rest is elements. */
  p->open = base + i - 1;
  if (!start_array(p)) {
    put(p, &p->text, d + put_end, n - put_end);
    p->mode = JP_WHOLE;
    return;
  }
  p->text.len = base + i;
  p->text.data[p->text.len] = '\0';
  p->mode = JP_ARRAY;
  array_feed(p, d + i, n - i);
}

int api_jpush_feed(struct api_jpush *p, char *data, size_t n)
{
  if (p->nomem)
    return RD_E_NOMEM;
  switch (p->mode) {
  case JP_HEAD: head_feed(p, data, n); break;
  case JP_WHOLE: put(p, &p->text, data, n); break;
  case JP_ARRAY: array_feed(p, data, n); break;
  case JP_TAIL:
  case JP_KEEP: put(p, &p->tail, data, n); break;
  }
  return p->nomem ? RD_E_NOMEM : 0;
}

/* ------------------------------------------------------------------ */
/* The end                                                            */
/* ------------------------------------------------------------------ */

/* Writes the region as its `k` elements "0" each with its separator (the
 * last one ']' if the region closed the array), padded with spaces so
 * that it has the same bytes and newlines, the last newline at the same
 * place among the tokens and as many bytes after it.  -1 if the counts
 * are inconsistent (a bug: nothing is written then). */
static int jp_zeros(char *o, const struct jp_region *r, uint64_t k, int closed)
{
  uint64_t e = 0, part1 = r->len - r->c, i;
  int cut = r->t1 > r->s1; /* a token before the newline, its sep after */
  char *start = o;

#define JP_SEP(idx) (closed && (idx) + 1 == k ? ']' : ',')
  if (r->c > r->len || r->t1 > k ||
      (r->nl > 0 && (2 * r->s1 + (uint64_t)cut + r->nl > part1 ||
                     (uint64_t)cut + 2 * (k - r->t1) > r->c)) ||
      (r->nl == 0 && 2 * k > r->len))
    return -1;
  if (r->nl > 0) {
    for (; e < r->s1; e++) {
      *o++ = '0';
      *o++ = JP_SEP(e);
    }
    if (cut)
      *o++ = '0';
    while ((uint64_t)(o - start) < part1 - r->nl)
      *o++ = ' ';
    for (i = 0; i < r->nl; i++)
      *o++ = '\n';
    if (cut) {
      *o++ = JP_SEP(e);
      e++;
    }
  }
  for (; e < k; e++) {
    *o++ = '0';
    *o++ = JP_SEP(e);
  }
  while ((uint64_t)(o - start) < r->len)
    *o++ = ' ';
#undef JP_SEP
  return 0;
}

/* api_json_decode() on the text, the zeros of the region and `rest`; on
 * success the converted elements replace the zeros. */
static int decode_rebuilt(struct api_jpush *p, const struct api_buf *rest,
                          uint64_t max_elements, struct api_request *req,
                          struct rd_error *err)
{
  size_t n;
  char *b;
  int rc;

  if (p->reg.len > SIZE_MAX - p->text.len - rest->len - 1 ||
      (b = malloc(p->text.len + (size_t)p->reg.len + rest->len + 1)) == NULL) {
    memset(req, 0, sizeof *req);
    return api_fail(err, RD_E_NOMEM,
                    "out of memory decoding the body; "
                    "retry later");
  }
  n = p->text.len;
  memcpy(b, p->text.data, n);
  if (jp_zeros(b + n, &p->reg, p->k, p->closed) != 0) {
    free(b);
    memset(req, 0, sizeof *req);
    return api_fail(err, API_E_INTERNAL, "the JSON push decoder lost count");
  }
  n += (size_t)p->reg.len;
  if (rest->len > 0)
    memcpy(b + n, rest->data, rest->len);
  n += rest->len;
  rc = api_json_decode(b, n, max_elements, req, err);
  free(b);
  if (rc != 0 || p->k == 0)
    return rc;
  if (req->params.dtype != p->dtype ||
      req->data_bytes < (size_t)p->k * p->esize) {
    /* Cannot happen: the dtype was read before the array, and a decoded
     * body has every element; never answer the zeros. */
    api_request_free(req);
    return api_fail(err, API_E_INTERNAL,
                    "the JSON push decoder disagrees "
                    "with the decoder");
  }
  memcpy(req->data, p->out, (size_t)p->k * p->esize);
  return 0;
}

int api_jpush_finish(struct api_jpush *p, uint64_t max_elements,
                     struct api_request *req, struct rd_error *err)
{
  struct api_buf doc;
  int rc;

  if (p->nomem) {
    memset(req, 0, sizeof *req);
    return api_fail(err, RD_E_NOMEM,
                    "out of memory decoding the body; "
                    "retry later");
  }
  switch (p->mode) {
  case JP_HEAD:
  case JP_WHOLE:
    return api_json_decode(p->text.data != NULL ? p->text.data : "",
                           p->text.len, max_elements, req, err);
  case JP_ARRAY: /* the body ended inside the array */
    return decode_rebuilt(p, &p->pend, max_elements, req, err);
  case JP_KEEP: return decode_rebuilt(p, &p->tail, max_elements, req, err);
  case JP_TAIL: break;
  }
  /* head + "[]" + tail: jansson checks everything but the elements. */
  api_buf_init(&doc);
  if (api_buf_append(&doc, p->text.data, p->open) != 0 ||
      api_buf_append(&doc, "[]", 2) != 0 ||
      (p->tail.len > 0 &&
       api_buf_append(&doc, p->tail.data, p->tail.len) != 0)) {
    api_buf_free(&doc);
    memset(req, 0, sizeof *req);
    return api_fail(err, RD_E_NOMEM,
                    "out of memory decoding the body; "
                    "retry later");
  }
  rc = api__json_decode_pushed(doc.data, doc.len, max_elements, p->dtype,
                               (void **)&p->out, p->k, req, err);
  api_buf_free(&doc);
  if (rc != 1)
    return rc;
  return decode_rebuilt(p, &p->tail, max_elements, req, err);
}
