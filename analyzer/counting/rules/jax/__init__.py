"""Rules for JAX primitives (domain "jax")."""
