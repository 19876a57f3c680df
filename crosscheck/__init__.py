"""Independent checks of rlsim against other simulators (not part of the `rlsim` package).

`crosscheck.vidur`: rlsim's rollout engine against Vidur's vLLM scheduler (`make
crosscheck-vidur`, README.md here). The modules shared by both sides (`batches`, `compare`)
use the standard library only, so they run in Vidur's own environment as well as rlsim's.
"""
