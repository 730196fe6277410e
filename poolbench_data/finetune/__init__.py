"""Training on PoolBench data with TRL: what the scripts in training/ share
(arguments, model lookup, resuming, saving: `common`) and the closed loop
(`loop`). The scripts stay thin, as TRL's own; heavy dependencies (torch,
transformers, trl) load only when a module here is imported, never with the
package."""
