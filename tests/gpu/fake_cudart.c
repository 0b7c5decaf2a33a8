// SPDX-License-Identifier: BSD-2-Clause
/* A stand-in for the CUDA runtime (libcudart.so.N) in tests/unit/test_cuptiload.c:
 * only its file name and folder matter, which say where its CUPTI is. */
int cudaRuntimeGetVersion(int *version);

int cudaRuntimeGetVersion(int *version)
{
	*version = 13000;
	return 0;
}
