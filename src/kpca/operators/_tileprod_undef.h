/* Ends one instantiation of _tileprod_kernel.h (see _tileprod.c). */
#undef TARGET
#undef ROWS
#undef PAIRS
#undef SCALAR
#undef VEC
#undef LANES
#undef FUNC
#undef VZERO
#undef VLOAD
#undef VSTORE
#undef VSET1
#undef VFMADD
#undef VMUL
#undef VADD
#undef VREDUCE
