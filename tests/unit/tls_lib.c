// SPDX-License-Identifier: BSD-2-Clause
/* A thread-local and the function that returns it, built once per TLS model
 * (Makefile: libtls_ie.so, libtls_gd.so) for test_tlsslot.c. */
__thread void *tls_lib_var;

void *tls_lib_get(void)
{
	return tls_lib_var;
}

void tls_lib_set(void *v)
{
	tls_lib_var = v;
}
