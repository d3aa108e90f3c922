/* pq_dl.h — libpq, loaded with dlopen when --db names a PostgreSQL (as
 * curl_dl.h loads libcurl), not linked: it and what it links (Kerberos,
 * LDAP, SASL, GnuTLS, ...) were 19 more shared libraries at every start of
 * every app, which most never use (ldd build/luamcp: 14 without, 33 with).
 * A user of this header calls libpq by its own names. */
#ifndef LUAMCP_PQ_DL_H
#define LUAMCP_PQ_DL_H

#include <stdbool.h>

#include <libpq-fe.h>

/* every libpq function luamcp calls */
#define PQ_DL_FUNCS(X) \
  X(PQcancel) \
  X(PQclear) \
  X(PQcmdTuples) \
  X(PQconnectPoll) \
  X(PQconnectStartParams) \
  X(PQconnectdbParams) \
  X(PQconninfoFree) \
  X(PQconninfoParse) \
  X(PQconsumeInput) \
  X(PQerrorMessage) \
  X(PQexec) \
  X(PQexecParams) \
  X(PQfinish) \
  X(PQflush) \
  X(PQfname) \
  X(PQfreeCancel) \
  X(PQfreemem) \
  X(PQftype) \
  X(PQgetCancel) \
  X(PQgetResult) \
  X(PQgetisnull) \
  X(PQgetlength) \
  X(PQgetvalue) \
  X(PQisBusy) \
  X(PQnfields) \
  X(PQnotifies) \
  X(PQntuples) \
  X(PQresultErrorField) \
  X(PQresultErrorMessage) \
  X(PQresultStatus) \
  X(PQsendQuery) \
  X(PQsendQueryParams) \
  X(PQsetNoticeProcessor) \
  X(PQsetSingleRowMode) \
  X(PQsetnonblocking) \
  X(PQsocket) \
  X(PQstatus) \
  X(PQtransactionStatus) \
  X(PQunescapeBytea)

typedef struct pq_dl_table {
#define PQ_DL_FIELD(name) __typeof__(name) *name;
  PQ_DL_FUNCS(PQ_DL_FIELD)
#undef PQ_DL_FIELD
} pq_dl_table;
extern pq_dl_table pq_dl;

/* libpq loaded, once for the process (any thread); false: pq_dl_why says why. */
bool pq_dl_ready(void);
const char *pq_dl_why(void);

#ifndef PQ_DL_OWN_NAMES /* pq_dl.c names the symbols themselves */
#define PQcancel pq_dl.PQcancel
#define PQclear pq_dl.PQclear
#define PQcmdTuples pq_dl.PQcmdTuples
#define PQconnectPoll pq_dl.PQconnectPoll
#define PQconnectStartParams pq_dl.PQconnectStartParams
#define PQconnectdbParams pq_dl.PQconnectdbParams
#define PQconninfoFree pq_dl.PQconninfoFree
#define PQconninfoParse pq_dl.PQconninfoParse
#define PQconsumeInput pq_dl.PQconsumeInput
#define PQerrorMessage pq_dl.PQerrorMessage
#define PQexec pq_dl.PQexec
#define PQexecParams pq_dl.PQexecParams
#define PQfinish pq_dl.PQfinish
#define PQflush pq_dl.PQflush
#define PQfname pq_dl.PQfname
#define PQfreeCancel pq_dl.PQfreeCancel
#define PQfreemem pq_dl.PQfreemem
#define PQftype pq_dl.PQftype
#define PQgetCancel pq_dl.PQgetCancel
#define PQgetResult pq_dl.PQgetResult
#define PQgetisnull pq_dl.PQgetisnull
#define PQgetlength pq_dl.PQgetlength
#define PQgetvalue pq_dl.PQgetvalue
#define PQisBusy pq_dl.PQisBusy
#define PQnfields pq_dl.PQnfields
#define PQnotifies pq_dl.PQnotifies
#define PQntuples pq_dl.PQntuples
#define PQresultErrorField pq_dl.PQresultErrorField
#define PQresultErrorMessage pq_dl.PQresultErrorMessage
#define PQresultStatus pq_dl.PQresultStatus
#define PQsendQuery pq_dl.PQsendQuery
#define PQsendQueryParams pq_dl.PQsendQueryParams
#define PQsetNoticeProcessor pq_dl.PQsetNoticeProcessor
#define PQsetSingleRowMode pq_dl.PQsetSingleRowMode
#define PQsetnonblocking pq_dl.PQsetnonblocking
#define PQsocket pq_dl.PQsocket
#define PQstatus pq_dl.PQstatus
#define PQtransactionStatus pq_dl.PQtransactionStatus
#define PQunescapeBytea pq_dl.PQunescapeBytea
#endif

#endif
