/* tls_shim.c — lets Debian 12's civetweb 1.15 serve TLS with OpenSSL 3.
 *
 * That civetweb is built for the OpenSSL 1.1 API and loads OpenSSL at run
 * time: dlopen("libssl.so"), then dlsym of each function it needs. OpenSSL 3
 * no longer exports SSL_get_peer_certificate (now SSL_get1_peer_certificate),
 * so civetweb calls a NULL pointer on the first HTTPS connection. This
 * library's soname is "libssl.so" and it depends on the real libssl.so.3:
 * luamcp loads it before starting civetweb with TLS, civetweb's
 * dlopen("libssl.so") then finds it already loaded (glibc matches sonames),
 * and its dlsym lookups reach OpenSSL 3 through it — plus the one function
 * below. */

typedef struct ssl_st SSL;
typedef struct x509_st X509;

X509 *SSL_get1_peer_certificate(const SSL *s);

X509 *SSL_get_peer_certificate(const SSL *s);
X509 *SSL_get_peer_certificate(const SSL *s) { return SSL_get1_peer_certificate(s); }
