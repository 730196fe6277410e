"""The OpenEnv app module of the PoolBench environment (openenv.yaml: `app: server.app:app`)."""
