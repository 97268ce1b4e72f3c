/* The tied pass (par/pass.h): a tied embedding's gradient all-reduce. When
 * the output layer shares its weights with the input embedding (Megatron's
 * default, --untie-embeddings-and-output-weights unset), the first and the
 * last pipeline stage each hold a copy, and Megatron all-reduces the two
 * copies' gradients over its embedding group (parallel_state.py
 * default_embedding_ranks: the first and last rank of each pipeline
 * group) after the data-parallel sync and before the optimizer step
 * (megatron/core/distributed/finalize_model_grads.py, finalize_model_grads
 * calls _allreduce_word_embedding_grads after finish_grad_sync; tag
 * core_v0.19.0, commit 5be9626). The gradient is the main gradient
 * (grad_bytes per parameter). Here a layer with shared_params > 0 shares
 * that many parameters with the model's first layer: when the two sit on
 * different pipeline ranks, the pass asks the dp pass for a finalize
 * all-reduce of shared_params x grad_bytes between them, on every
 * instance. On one rank (pp = 1, or a V placement) the copy is local and
 * costs nothing, as in Megatron, whose embedding group then has one
 * rank. */
#ifndef PS_PAR_TIED_H
#define PS_PAR_TIED_H

#include "par/pass.h"

extern const par_pass par_tied_pass;

#endif
