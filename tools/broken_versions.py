"""Shows that tests catch what they name: each case breaks the code on purpose
and runs the tests that must notice.

    python -m tools.broken_versions                  # every case
    python -m tools.broken_versions --case NAME ...  # some cases
    python -m tools.broken_versions --list
    python -m tools.broken_versions --tests_from=REV # the tests as of REV
    python -m tools.broken_versions --control        # unbroken: all must pass

A case replaces one piece of text in one source file, in a throwaway copy of
the working tree (the checkout itself is never touched), and runs the named
tests there with pytest. The breakage is caught when those tests fail. The
table at the end says, for each case, "caught" (every named test failed),
"partly" (some did), "MISSED" (they all passed on broken code) or "not
found" (a test does not exist, e.g. with `--tests_from` a revision from
before it was written), and how long it took; the exit status is 1 unless
every case was caught. `--control` runs the same tests on an unbroken copy,
where they must pass, so that a failure is known to come from the breakage.

This is the habit of docs/ARCHITECTURE.md's testing section made
repeatable: a test is trusted once it has been seen to fail on a broken
version of the code it checks. `tools/mutation_report.py` does the same
blindly, over many small mutations; the cases here are the deliberate,
larger breakages that found weak tests, and the ones a mutation tool cannot
reach: code run in the trainers' subprocesses, trained models, exports.
"""

import argparse
import dataclasses
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import time

REPOSITORY = pathlib.Path(__file__).resolve().parents[1]
# Not copied: the environment, git's data, and the mutation tool's outputs.
IGNORED = (".venv", ".git", "mutants", "results", "__pycache__", ".pytest_cache",
           "demo_output", "*.egg-info")


@dataclasses.dataclass(frozen=True)
class Case:
    """One deliberate breakage and the tests that must fail on it."""

    name: str
    path: str
    old: str
    new: str
    tests: tuple


CASES = (
    Case("batching_key_ignores_shapes_and_dtypes", "tfnlp/serve/batching.py",
         "(name, array.shape[1:], array.dtype.str)", "(name,)",
         ("tests/serve/test_batching.py::test_requests_of_different_shapes_are_not_merged",
          "tests/serve/test_batching.py::test_requests_of_different_dtypes_are_not_merged")),
    Case("batching_key_ignores_dtypes", "tfnlp/serve/batching.py",
         "(name, array.shape[1:], array.dtype.str)", "(name, array.shape[1:])",
         ("tests/serve/test_batching.py::test_requests_of_different_dtypes_are_not_merged",)),
    Case("batching_answers_every_request_with_the_first_rows", "tfnlp/serve/batching.py",
         "{name: parts[index] for name, parts in split.items()}",
         "{name: parts[0] for name, parts in split.items()}",
         ("tests/serve/test_http_server.py::test_load_test_of_2000_requests",
          "tests/serve/test_bert_serving.py::test_load_test_of_2000_text_requests_at_concurrency_16")),
    Case("replicas_apply_no_update", "trainer/training_loop.py",
         "        self.optimizer.apply(gradients, self.model.trainable_variables)",
         "        if self.num_replicas == 1:\n"
         "            self.optimizer.apply(gradients, self.model.trainable_variables)",
         ("tests/trainer/test_pretrain.py::test_mirrored_strategy_matches_one_replica",
          "tests/trainer/test_pretrain.py::test_multi_worker_strategy_matches_one_replica")),
    Case("replicas_normalise_by_their_own_masked_lm_weights",
         "trainer/tasks/bert_pretraining.py",
         'masked_lm_denominator=totals["mlm_weight"] + MASKED_LM_DENOMINATOR_EPSILON',
         'masked_lm_denominator=self.batch_totals(batch)["mlm_weight"]'
         " + MASKED_LM_DENOMINATOR_EPSILON",
         ("tests/trainer/test_pretrain.py::test_mirrored_strategy_matches_one_replica",)),
    Case("token_accuracy_counts_every_position", "trainer/tasks/finetuning.py",
         'sums["correct"] = tf.reduce_sum(_right(batch["labels"], outputs) * weights)',
         'sums["correct"] = tf.reduce_sum(_right(batch["labels"], outputs))',
         ("tests/trainer/test_finetune.py::test_token_classification_from_pretraining_checkpoint",)),
    Case("pretraining_checkpoint_not_restored", "trainer/bert_models.py",
         "    restore_encoder(encoder, prefix)\n    return encoder,",
         "    return encoder,",
         ("tests/trainer/test_finetune.py::test_token_classification_from_pretraining_checkpoint",)),
    Case("exact_match_is_the_start_alone", "trainer/tasks/finetuning.py",
         "both_correct=tf.reduce_sum(start * end)",
         "both_correct=tf.reduce_sum(start)",
         ("tests/trainer/test_finetune.py::test_span_from_huggingface_checkpoint",)),
    Case("exact_match_is_either_position", "trainer/tasks/finetuning.py",
         "both_correct=tf.reduce_sum(start * end)",
         "both_correct=tf.reduce_sum(tf.maximum(start, end))",
         ("tests/trainer/test_finetune.py::test_span_from_huggingface_checkpoint",)),
    Case("huggingface_weights_not_loaded", "tfnlp/models/bert/bert_encoder.py",
         "        huggingface.load_encoder_weights(encoder, checkpoint.encoder_tensors, source)\n",
         "",
         ("tests/trainer/test_finetune.py::test_span_from_huggingface_checkpoint",)),
    Case("pairs_lose_their_first_segment", "tfnlp/export/text_preprocessor.py",
         "return self._pack([tokenize(columns[:, 0]), tokenize(columns[:, 1])])",
         "return self._pack([tokenize(columns[:, 1])])",
         ("tests/serve/test_bert_serving.py::test_pairs_and_over_long_text_are_packed_and_truncated",)),
    Case("pretraining_exports_fresh_weights", "trainer/tasks/bert_pretraining.py",
         "                run, export_trained_model, model, flags.export_dir,",
         "                run, export_trained_model,"
         " build_model('pretraining', BertEncoder(config)), flags.export_dir,",
         ("tests/trainer/test_pretrain.py::test_exports_the_encoder",)),
    Case("trainer_export_skips_the_checkpoint", "trainer/bert_models.py",
         "    status = tf.train.Checkpoint(model=model).restore(prefix)\n",
         "    status = tf.train.Checkpoint().restore(prefix)\n",
         ("tests/trainer/test_pretrain.py::test_trainer_export_of_a_pretraining_run",)),
    Case("nan_loss_not_checked", "trainer/training_loop.py",
         "        if not math.isfinite(loss):", "        if False:",
         ("tests/trainer/test_resume_and_steps.py::test_nan_loss_stops_with_the_step",)),
    Case("checkpoint_saved_before_the_nan_check", "trainer/training_loop.py",
         "        if not math.isfinite(loss):",
         "        checkpoints.save(step)\n        if not math.isfinite(loss):",
         ("tests/trainer/test_resume_and_steps.py::test_nan_loss_stops_with_the_step",)),
    Case("masked_share_off_by_a_point", "pipelines/pretraining_instances.py",
         "        if rng.random() < 0.8:", "        if rng.random() < 0.808:",
         ("tests/pipelines/test_pretraining_data.py::test_real_text_matches_the_original_distribution",)),
    Case("instances_three_tokens_shorter", "pipelines/pretraining_instances.py",
         "    max_num_tokens = config.max_seq_length - 3",
         "    max_num_tokens = config.max_seq_length - 6",
         ("tests/pipelines/test_pretraining_data.py::test_real_text_matches_the_original_distribution",)),
    # The translation models and decoding.
    Case("luong_attends_with_the_previous_state", "tfnlp/models/seq2seq/rnn_seq2seq.py",
         "attend(\n                x, memory", "attend(\n                lstm_states[-1][0], memory",
         ("tests/models/seq2seq/test_rnn_seq2seq.py::test_logits_follow_each_papers_step_order[luong_dot]",
          "tests/models/seq2seq/test_rnn_seq2seq.py::test_logits_follow_each_papers_step_order[luong_general]",
          "tests/models/seq2seq/test_rnn_seq2seq.py::test_logits_follow_each_papers_step_order[luong_concat]")),
    Case("bahdanau_attends_again_with_the_new_state", "tfnlp/models/seq2seq/rnn_seq2seq.py",
         "if self.input_feeding:\n            context, alignment",
         "if self.attention is not None:\n            context, alignment",
         ("tests/models/seq2seq/test_rnn_seq2seq.py::test_logits_follow_each_papers_step_order[bahdanau]",
          "tests/models/seq2seq/test_rnn_seq2seq.py::test_logits_follow_each_papers_step_order[bahdanau_normalized]")),
    Case("decoder_layers_start_from_the_encoder_layers_reversed",
         "tfnlp/models/seq2seq/rnn_seq2seq.py",
         'for state in outputs["final_states"]]', 'for state in outputs["final_states"][::-1]]',
         ("tests/models/seq2seq/test_rnn_seq2seq.py::test_logits_follow_each_papers_step_order[None]",
          "tests/models/seq2seq/test_rnn_seq2seq.py::test_logits_follow_each_papers_step_order[luong_general]",
          "tests/models/seq2seq/test_rnn_seq2seq.py::test_logits_follow_each_papers_step_order[bahdanau]")),
    Case("rnn_dropout_one_mask_for_every_step", "tfnlp/models/seq2seq/rnn_seq2seq.py",
         "step_masks = ops.take(dropout_masks, index, axis=0)",
         "step_masks = ops.take(dropout_masks, 0, axis=0)",
         ("tests/models/seq2seq/test_rnn_seq2seq.py::test_dropout_acts_in_training_only_and_differs_per_step",)),
    Case("length_bound_rounded_down", "tfnlp/models/seq2seq/generation.py",
         "ops.ceil(max_length_a", "ops.floor(max_length_a",
         ("tests/models/seq2seq/test_rnn_seq2seq.py::test_each_translation_reaches_its_length_bound_a_source_length_plus_b_and_stops[rounded_up]",
          "tests/export/test_translation_signatures.py::test_every_translation_of_a_model_that_never_ends_is_as_long_as_its_bound",
          "tests/serve/test_translation_serving.py::test_the_export_decodes_with_the_settings_of_its_serving_record")),
    Case("length_bound_counts_the_source_eos", "tfnlp/models/seq2seq/generation.py",
         "(source_lengths - 1.0)", "source_lengths",
         ("tests/models/seq2seq/test_rnn_seq2seq.py::test_each_translation_reaches_its_length_bound_a_source_length_plus_b_and_stops[rounded_up]",
          "tests/models/seq2seq/test_rnn_seq2seq.py::test_each_translation_reaches_its_length_bound_a_source_length_plus_b_and_stops[capped_at_max_length]",
          "tests/export/test_translation_signatures.py::test_every_translation_of_a_model_that_never_ends_is_as_long_as_its_bound",
          "tests/serve/test_translation_serving.py::test_the_export_decodes_with_the_settings_of_its_serving_record")),
    Case("length_bound_ignored_for_a_0", "tfnlp/models/seq2seq/generation.py",
         "if max_length_a is not None:", "if max_length_a:",
         ("tests/models/seq2seq/test_rnn_seq2seq.py::test_each_translation_reaches_its_length_bound_a_source_length_plus_b_and_stops[a_0_b_0]",)),
    Case("generation_starts_from_eos", "tfnlp/models/seq2seq/generation.py",
         'BOS_ID, dtype="int32")', 'EOS_ID, dtype="int32")',
         ("tests/models/seq2seq/test_rnn_seq2seq.py::test_greedy_generation_equals_greedy_choices_of_teacher_forced_passes",
          "tests/models/seq2seq/test_transformer_seq2seq.py::test_greedy_generation_equals_greedy_choices_of_teacher_forced_passes")),
    Case("transformer_refuses_max_length_equal_to_max_sequence_length",
         "tfnlp/models/seq2seq/transformer_seq2seq.py",
         "if max_length > self.max_sequence_length:", "if max_length >= self.max_sequence_length:",
         ("tests/models/seq2seq/test_transformer_seq2seq.py::test_generation_runs_up_to_max_sequence_length_and_refuses_one_more",)),
    Case("per_example_max_lengths_not_capped", "tfnlp/decoding/contract.py",
         "max_lengths = ops.clip(max_lengths, 1, max_length)",
         "max_lengths = ops.maximum(max_lengths, 1)",
         ("tests/decoding/test_beam_search.py::test_per_example_max_lengths",)),
    Case("top_k_capped_one_below_the_vocabulary", "tfnlp/decoding/sampling.py",
         "min(self.top_k, vocabulary_size)", "min(self.top_k, vocabulary_size - 1)",
         ("tests/decoding/test_sampling.py::test_top_k_of_the_vocabulary_size_or_more_samples_every_token[8]",
          "tests/decoding/test_sampling.py::test_top_k_of_the_vocabulary_size_or_more_samples_every_token[9]")),
    Case("top_p_above_one_accepted", "tfnlp/decoding/sampling.py",
         "or not 0 < top_p <= 1", "or not 0 < top_p",
         ("tests/decoding/test_api.py::test_invalid_arguments_are_explained",)),
    Case("sampling_config_drops_min_length", "tfnlp/decoding/sampling.py",
         '            "min_length": self.min_length,\n', "",
         ("tests/decoding/test_api.py::test_config_round_trip[RandomSampling]",)),
    Case("encoder_final_cell_state_takes_the_backward_hidden_state", "tfnlp/layers/lstm_encoder.py",
         "[forward_cell, backward_cell], -1)", "[forward_cell, backward_hidden], -1)",
         ("tests/layers/test_lstm_encoder.py::test_final_hidden_and_cell_states_are_forward_then_backward_after_the_real_tokens",)),
    # The translation export and the server.
    Case("source_cut_one_piece_too_long", "tfnlp/export/translation_signatures.py",
         "[:, : self.max_length - 1]", "[:, : self.max_length]",
         ("tests/serve/test_translation_serving.py::test_the_ids_signature_translates_the_text_signatures_source_ids_alike",
          "tests/export/test_translation_signatures.py::test_source_ids_are_the_pieces_cut_to_max_length_minus_one_then_eos_then_padding")),
    Case("record_beam_size_ignored", "trainer/tasks/translation.py",
         "return decoding.BeamSearch(beam_size=beam_size, length_penalty=length_penalty,",
         "return decoding.BeamSearch(length_penalty=length_penalty,",
         ("tests/serve/test_translation_serving.py::test_the_export_decodes_with_the_settings_of_its_serving_record",)),
    Case("record_length_penalty_ignored", "trainer/tasks/translation.py",
         'make_decoder(record["beam_size"], record["length_penalty"],',
         'make_decoder(record["beam_size"], "gnmt",',
         ("tests/serve/test_translation_serving.py::test_the_export_decodes_with_the_settings_of_its_serving_record",)),
    Case("record_max_length_a_ignored", "trainer/tasks/translation.py",
         '        max_length_a=record["max_length_a"],\n', "",
         ("tests/serve/test_translation_serving.py::test_the_export_decodes_with_the_settings_of_its_serving_record",)),
    Case("record_max_length_b_ignored", "trainer/tasks/translation.py",
         '        max_length_b=record["max_length_b"],\n', "",
         ("tests/serve/test_translation_serving.py::test_the_export_decodes_with_the_settings_of_its_serving_record",)),
    Case("signatures_drop_max_length_b", "tfnlp/export/translation_signatures.py",
         "self.max_length_a, self.max_length_b)", "self.max_length_a)",
         ("tests/export/test_translation_signatures.py::test_every_translation_of_a_model_that_never_ends_is_as_long_as_its_bound",)),
    Case("alignments_not_zeroed_outside_real_tokens", "tfnlp/export/translation_signatures.py",
         '"alignments": tf.where(real, alignments, tf.zeros_like(alignments)),',
         '"alignments": alignments,',
         ("tests/export/test_translation_signatures.py::test_alignments_are_the_models_on_its_translation_and_zero_outside_real_tokens",)),
    Case("alignments_of_unshifted_targets", "tfnlp/export/translation_signatures.py",
         "DECODER_TOKEN_IDS: decoder_inputs(target_ids),", "DECODER_TOKEN_IDS: target_ids,",
         ("tests/export/test_translation_signatures.py::test_alignments_are_the_models_on_its_translation_and_zero_outside_real_tokens",)),
    Case("pieces_of_padding_not_blank", "tfnlp/export/translation_signatures.py",
         "return tf.where(tf.not_equal(ids, PAD_ID), pieces, tf.zeros_like(pieces))",
         "return pieces",
         ("tests/export/test_translation_signatures.py::test_alignments_are_the_models_on_its_translation_and_zero_outside_real_tokens",)),
    Case("ids_export_without_serving_default", "tfnlp/export/translation_signatures.py",
         '            functions["serving_default"] = on_ids', "            pass",
         ("tests/export/test_translation_signatures.py::test_without_text_signatures_serving_default_is_translate_ids",)),
    Case("id_check_lets_the_size_through", "tfnlp/export/id_checks.py",
         "tf.debugging.assert_less(ids,", "tf.debugging.assert_less_equal(ids,",
         ("tests/export/test_id_checks.py::test_check_ids_takes_ids_from_0_to_size_minus_1[int32]",
          "tests/export/test_translation_signatures.py::test_the_ids_signature_takes_ids_from_0_to_the_vocabulary_size_minus_1")),
    Case("integer_range_one_past_the_largest", "tfnlp/serve/rest_api.py",
         "if not limits.min <= value <= limits.max:", "if not limits.min <= value <= limits.max + 1:",
         ("tests/serve/test_rest_api.py::test_integers_from_the_smallest_to_the_largest_of_their_dtype_are_accepted_and_no_others[int32]",)),
    Case("float_range_of_float32_for_every_dtype", "tfnlp/serve/rest_api.py",
         "largest = float(ml_dtypes.finfo(dtype).max)",
         "largest = float(ml_dtypes.finfo(np.float32).max)",
         ("tests/serve/test_rest_api.py::test_numbers_up_to_the_largest_magnitude_of_their_float_dtype_are_accepted_and_no_larger[float16]",
          "tests/serve/test_rest_api.py::test_numbers_up_to_the_largest_magnitude_of_their_float_dtype_are_accepted_and_no_larger[bfloat16]")),
    Case("float_largest_magnitude_refused", "tfnlp/serve/rest_api.py",
         "if finite and abs(value) > largest:", "if finite and abs(value) >= largest:",
         ("tests/serve/test_rest_api.py::test_numbers_up_to_the_largest_magnitude_of_their_float_dtype_are_accepted_and_no_larger[float32]",)),
    Case("inputs_32_lists_deep_refused", "tfnlp/serve/rest_api.py",
         "if depth == MAX_INPUT_RANK:", "if depth == MAX_INPUT_RANK - 1:",
         ("tests/serve/test_rest_api.py::test_inputs_nested_32_lists_deep_are_read",)),
    Case("content_length_of_19_digits_read", "tfnlp/serve/http_server.py",
         'r"[0-9]{1,18}"', 'r"[0-9]{1,19}"',
         ("tests/serve/test_http_server.py::test_a_content_length_of_1_to_18_ascii_digits_is_read_and_none_or_more_get_411[19_digits]",)),
    Case("content_length_of_18_digits_refused", "tfnlp/serve/http_server.py",
         'r"[0-9]{1,18}"', 'r"[0-9]{1,17}"',
         ("tests/serve/test_http_server.py::test_a_content_length_of_1_to_18_ascii_digits_is_read_and_none_or_more_get_411[18_digits]",)),
    Case("body_of_max_body_bytes_refused", "tfnlp/serve/http_server.py",
         "if length > limit:", "if length >= limit:",
         ("tests/serve/test_http_server.py::test_a_body_of_max_body_bytes_is_read_and_one_byte_more_gets_413",)),
    Case("request_timeout_per_read", "tfnlp/serve/http_server.py",
         "remaining = deadline - time.monotonic()", "remaining = timeout",
         ("tests/serve/test_http_server.py::test_the_request_timeout_bounds_the_whole_body_not_each_read",)),
    Case("versions_of_non_ascii_digits", "tfnlp/export/versions.py",
         "if not (name.isascii() and name.isdigit() and exists(",
         "if not (name.isdigit() and exists(",
         ("tests/serve/test_model_store.py::test_versions_are_the_directories_named_by_ascii_digits_that_hold_a_saved_model",)),
    Case("versions_without_a_saved_model", "tfnlp/export/versions.py",
         'name.isdigit() and exists(os.path.join(path, "saved_model.pb")))', "name.isdigit())",
         ("tests/serve/test_model_store.py::test_versions_are_the_directories_named_by_ascii_digits_that_hold_a_saved_model",)),
    Case("command_line_max_instances_ignored", "tfnlp/serve/__main__.py",
         "            max_instances_per_request=flags.max_instances_per_request,\n", "",
         ("tests/serve/test_translation_serving.py::test_python_m_tfnlp_serve_serves_the_export",)),
    # The translation trainer.
    Case("bleu_swaps_hypotheses_and_references", "trainer/translation_eval.py",
         '"bleu": sacrebleu.corpus_bleu(hypotheses, [references]).score,',
         '"bleu": sacrebleu.corpus_bleu(references, [hypotheses]).score,',
         ("tests/trainer/test_translation_eval.py::test_corpus_scores_are_sacrebleus_of_the_hypotheses_against_the_references",
          "tests/trainer/test_translation_eval.py::test_scores_the_detokenized_translations_against_the_validation_references",
          "tests/trainer/test_translation_eval.py::test_corpus_bleu_is_the_brevity_penalised_precision_of_the_hypotheses",
          "tests/trainer/test_translate.py::test_served_translations_score_the_logged_bleu",
          "tests/trainer/test_translate_rnn.py::test_the_export_scores_the_logged_bleu_with_stock_ops")),
    Case("hypotheses_scored_as_pieces", "trainer/translation_eval.py",
         "            hypotheses.extend(detokenize(self.tokenizer, ids))",
         '            hypotheses.extend(" ".join(self._pieces(row[row > 3])) for row in ids)',
         ("tests/trainer/test_translation_eval.py::test_scores_the_detokenized_translations_against_the_validation_references",
          "tests/trainer/test_translate.py::test_served_translations_score_the_logged_bleu",
          "tests/trainer/test_translate_rnn.py::test_the_export_scores_the_logged_bleu_with_stock_ops")),
    Case("export_at_the_end_writes_the_latest_model", "trainer/tasks/translation.py",
         "            if scorer is not None and scorer.best:\n", "            if False:\n",
         ("tests/trainer/test_translate.py::test_served_translations_score_the_logged_bleu",)),
    Case("best_checkpoint_saved_at_every_evaluation", "trainer/translation_eval.py",
         'if scores["bleu"] > self.best.get("bleu", -1.0):', "if True:",
         ("tests/trainer/test_translate.py::test_writes_checkpoints_logs_and_the_best_checkpoint",
          "tests/trainer/test_translate.py::test_served_translations_score_the_logged_bleu",
          "tests/trainer/test_translation_eval.py::test_keeps_the_checkpoint_of_the_best_bleu_not_a_tie_or_a_worse_one")),
    Case("a_tie_replaces_the_best_checkpoint", "trainer/translation_eval.py",
         'if scores["bleu"] > self.best.get("bleu", -1.0):',
         'if scores["bleu"] >= self.best.get("bleu", -1.0):',
         ("tests/trainer/test_translation_eval.py::test_keeps_the_checkpoint_of_the_best_bleu_not_a_tie_or_a_worse_one",)),
    Case("a_resumed_run_forgets_its_best", "trainer/translation_eval.py",
         "self.best = run_files.read_json(os.path.join(self.best_path, BEST_FILE), {})",
         "self.best = {}",
         ("tests/trainer/test_translation_eval.py::test_a_resumed_run_keeps_the_best_of_its_earlier_evaluations",)),
    Case("a_first_evaluation_at_bleu_zero_is_not_kept", "trainer/translation_eval.py",
         'self.best.get("bleu", -1.0)', 'self.best.get("bleu", 0.0)',
         ("tests/trainer/test_translation_eval.py::test_the_first_evaluation_is_kept_even_at_bleu_zero",)),
    Case("lowercase_bleu_is_cased", "trainer/translation_eval.py",
         "lowercase=True).score,", "lowercase=False).score,",
         ("tests/trainer/test_translation_eval.py::test_corpus_bleu_is_the_brevity_penalised_precision_of_the_hypotheses",
          "tests/trainer/test_translation_eval.py::test_corpus_scores_are_sacrebleus_of_the_hypotheses_against_the_references",
          "tests/trainer/test_translation_eval.py::test_scores_the_detokenized_translations_against_the_validation_references")),
    Case("evaluation_drops_pairs_longer_than_max_length", "trainer/translation_eval.py",
         "                evaluation=True)", "                evaluation=False)",
         ("tests/trainer/test_translation_eval.py::test_pairs_longer_than_max_length_are_scored_too[1]",
          "tests/trainer/test_translation_eval.py::test_pairs_longer_than_max_length_are_scored_too[2]")),
    Case("samples_show_the_source_as_the_reference", "trainer/translation_eval.py",
         "references = detokenize(self.tokenizer, self.samples[TARGETS])",
         "references = detokenize(self.tokenizer, self.samples[INPUTS])",
         ("tests/trainer/test_translation_eval.py::test_logs_each_sample_with_its_own_reference_and_translation[1]",)),
    Case("samples_one_short", "trainer/translation_eval.py",
         "rows[name].extend(list(batch[name][: count - len(rows[name])]))",
         "rows[name].extend(list(batch[name][: count - 1 - len(rows[name])]))",
         ("tests/trainer/test_translation_eval.py::test_logs_each_sample_with_its_own_reference_and_translation[6]",)),
    Case("load_ignores_the_best_checkpoint", "trainer/tasks/translation.py",
         "path = checkpoint or best_checkpoint(model_dir) or find_checkpoint(",
         "path = checkpoint or find_checkpoint(",
         ("tests/trainer/test_translation_models.py::test_a_run_loads_its_best_checkpoint_by_default_and_a_given_one_when_asked",
          "tests/trainer/test_translation_models.py::test_translate_text_decodes_as_the_run_recorded_unless_a_flag_says_otherwise[recorded]",
          "tests/trainer/test_translation_models.py::test_export_of_a_run_decodes_its_best_model_as_recorded_unless_a_flag_says_otherwise[recorded]")),
    Case("load_prefers_the_best_to_the_checkpoint_given", "trainer/tasks/translation.py",
         "path = checkpoint or best_checkpoint(model_dir) or find_checkpoint(",
         "path = best_checkpoint(model_dir) or checkpoint or find_checkpoint(",
         ("tests/trainer/test_translation_models.py::test_a_run_loads_its_best_checkpoint_by_default_and_a_given_one_when_asked",
          "tests/trainer/test_translation_models.py::test_translate_text_loads_the_checkpoint_given")),
    Case("load_accepts_a_checkpoint_missing_model_variables", "trainer/tasks/translation.py",
         "    status.assert_existing_objects_matched()  # every model variable was in it\n", "",
         ("tests/trainer/test_translation_models.py::test_a_checkpoint_without_every_model_variable_is_refused",)),
    Case("signatures_ignore_the_recorded_length_penalty_alpha", "trainer/tasks/translation.py",
         'make_decoder(record["beam_size"], record["length_penalty"],\n                     record["length_penalty_alpha"]),',
         'make_decoder(record["beam_size"], record["length_penalty"]),',
         ("tests/trainer/test_translation_models.py::test_translation_signatures_decode_as_the_record_says[beam]",
          "tests/serve/test_translation_serving.py::test_the_export_decodes_with_the_settings_of_its_serving_record")),
    Case("signatures_swap_max_length_a_and_b", "trainer/tasks/translation.py",
         'max_length_a=record["max_length_a"],\n        max_length_b=record["max_length_b"],',
         'max_length_a=record["max_length_b"],\n        max_length_b=record["max_length_a"],',
         ("tests/trainer/test_translation_models.py::test_translation_signatures_decode_as_the_record_says[beam]",
          "tests/trainer/test_translation_models.py::test_translation_signatures_decode_as_the_record_says[greedy]")),
    Case("serving_record_leaves_out_the_length_penalty_alpha", "trainer/tasks/translation.py",
         'DECODING_SETTINGS = ("beam_size", "length_penalty", "length_penalty_alpha",',
         'DECODING_SETTINGS = ("beam_size", "length_penalty",',
         ("tests/trainer/test_translation_models.py::test_serving_record_holds_the_vocabulary_max_length_and_each_decoding_flag",)),
    Case("translate_text_ignores_the_decoding_flags", "trainer/translate_text.py",
         "    record.update({name: value for name, value in decoding.items() if value is not None})\n", "",
         ("tests/trainer/test_translation_models.py::test_translate_text_decodes_as_the_run_recorded_unless_a_flag_says_otherwise[flags]",)),
    Case("translate_text_overrides_the_record_with_unset_flags", "trainer/translate_text.py",
         "record.update({name: value for name, value in decoding.items() if value is not None})",
         "record.update(decoding)",
         ("tests/trainer/test_translation_models.py::test_translate_text_decodes_as_the_run_recorded_unless_a_flag_says_otherwise[recorded]",)),
    Case("export_ignores_the_decoding_flags", "trainer/tasks/translation.py",
         "    record.update({name: getattr(flags, name) for name in DECODING_SETTINGS\n                   if getattr(flags, name) is not None})\n", "",
         ("tests/trainer/test_translation_models.py::test_export_of_a_run_decodes_its_best_model_as_recorded_unless_a_flag_says_otherwise[flags]",)),
    Case("transformer_positions_stop_at_256", "trainer/tasks/translation.py",
         "max_sequence_length=max(flags.max_length, 256))", "max_sequence_length=256)",
         ("tests/trainer/test_translation_models.py::test_the_transformer_has_positions_for_max_length_and_at_least_256[257-257]",)),
    Case("make_decoder_greedy_for_a_beam_of_two", "trainer/tasks/translation.py",
         "if beam_size == 1:", "if beam_size <= 2:",
         ("tests/trainer/test_translation_models.py::test_make_decoder_is_greedy_for_a_beam_of_one_else_a_beam_search[2]",)),
    Case("stats_shortcut_skips_shards_one_id_too_long", "trainer/tasks/translation.py",
         "length is not None and length <= max_length for",
         "length is not None and length <= max_length + 1 for",
         ("tests/trainer/test_translate.py::test_shards_whose_stats_allow_pairs_one_id_too_long_are_read",)),
    Case("average_refuses_all_the_kept_checkpoints", "trainer/average_checkpoints.py",
         "if len(paths) < num_checkpoints:", "if len(paths) <= num_checkpoints:",
         ("tests/trainer/test_translate.py::test_average_checkpoints_averages_the_model_variables[3]",)),
    Case("translate_lines_translates_whitespace_lines", "trainer/translate_text.py",
         "order = sorted((index for index, line in enumerate(lines) if line.strip()),",
         "order = sorted((index for index, line in enumerate(lines) if line),",
         ("tests/trainer/test_translation_models.py::test_translate_lines_puts_each_translation_on_its_source_line[3]",)),
    Case("translate_lines_batches_one_short", "trainer/translate_text.py",
         "indices = order[start : start + batch_size]", "indices = order[start : start + batch_size - 1]",
         ("tests/trainer/test_translation_models.py::test_translate_lines_puts_each_translation_on_its_source_line[3]",)),
    Case("command_line_max_batch_size_ignored", "tfnlp/serve/__main__.py",
         "            max_batch_size=flags.max_batch_size,\n", "",
         ("tests/serve/test_command_line.py::test_the_batch_flags_set_the_largest_batch_and_how_long_a_batch_waits_for_more_rows",)),
    Case("command_line_batch_timeout_ignored", "tfnlp/serve/__main__.py",
         "            batch_timeout_micros=flags.batch_timeout_micros,\n", "",
         ("tests/serve/test_command_line.py::test_the_batch_flags_set_the_largest_batch_and_how_long_a_batch_waits_for_more_rows",)),
    Case("command_line_max_body_bytes_ignored", "tfnlp/serve/__main__.py",
         "            max_body_bytes=flags.max_body_bytes,\n", "",
         ("tests/serve/test_command_line.py::test_the_size_limit_flags_set_the_requests_that_are_refused",)),
    Case("command_line_max_string_bytes_ignored", "tfnlp/serve/__main__.py",
         "            max_string_bytes=flags.max_string_bytes,\n", "",
         ("tests/serve/test_command_line.py::test_the_size_limit_flags_set_the_requests_that_are_refused",)),
    Case("command_line_request_timeout_ignored", "tfnlp/serve/__main__.py",
         "            request_timeout=flags.request_timeout,\n", "",
         ("tests/serve/test_command_line.py::test_the_request_timeout_flag_sets_how_long_a_body_may_take_to_arrive",)),
    Case("command_line_host_ignored", "tfnlp/serve/__main__.py",
         "model_store, host=flags.host, port=flags.port,", "model_store, port=flags.port,",
         ("tests/serve/test_command_line.py::test_the_model_name_host_and_port_flags_set_where_the_model_is_served",)),
    Case("command_line_port_ignored", "tfnlp/serve/__main__.py",
         "model_store, host=flags.host, port=flags.port,", "model_store, host=flags.host,",
         ("tests/serve/test_command_line.py::test_the_model_name_host_and_port_flags_set_where_the_model_is_served",)),
    Case("command_line_model_name_ignored", "tfnlp/serve/__main__.py",
         "ModelStore(flags.model_dir, flags.model_name)", "ModelStore(flags.model_dir)",
         ("tests/serve/test_command_line.py::test_the_model_name_host_and_port_flags_set_where_the_model_is_served",)),
    Case("bfloat16_input_not_read_as_float", "tfnlp/serve/rest_api.py",
         "if np.issubdtype(dtype, np.floating) or dtype == ml_dtypes.bfloat16:",
         "if np.issubdtype(dtype, np.floating):",
         ("tests/serve/test_rest_api.py::test_numbers_up_to_the_largest_magnitude_of_their_float_dtype_are_accepted_and_no_larger[bfloat16]",)),
    Case("float_input_integers_kept_as_int", "tfnlp/serve/rest_api.py",
         "        return float(value)\n", "        return value\n",
         ("tests/serve/test_rest_api.py::test_numbers_up_to_the_largest_magnitude_of_their_float_dtype_are_accepted_and_no_larger[bfloat16]",)),
)


def copy_tree(destination, tests_from=None):
    """Copies the working tree to `destination`; with `tests_from`, its
    `tests/` folder is that git revision's."""
    shutil.copytree(REPOSITORY, destination, ignore=shutil.ignore_patterns(*IGNORED))
    if tests_from:
        shutil.rmtree(destination / "tests")
        archive = subprocess.run(["git", "archive", tests_from, "tests"], cwd=REPOSITORY,
                                 check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x"], cwd=destination, input=archive, check=True)


def break_code(root, case):
    path = root / case.path
    text = path.read_text(encoding="utf-8")
    if text.count(case.old) != 1:
        raise ValueError(
            f"Case {case.name}: the text to replace occurs {text.count(case.old)} times in "
            f"{case.path}, not once. The code has changed: update the case in {__file__}."
        )
    path.write_text(text.replace(case.old, case.new), encoding="utf-8")


def run_tests(root, tests):
    """Runs pytest on `tests` in `root`; returns (outcome, seconds, summary)."""
    environment = dict(os.environ, PYTHONPATH=str(root), TF_CPP_MIN_LOG_LEVEL="2")
    environment.setdefault("TFNLP_DATA_DIR", str(REPOSITORY.parent / "shared" / "data"))
    started = time.monotonic()
    process = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=",
         *tests],
        cwd=root, env=environment, capture_output=True, text=True,
    )
    seconds = time.monotonic() - started
    summary = process.stdout.strip().splitlines()[-1] if process.stdout.strip() else ""
    failed = int(re.search(r"(\d+) failed", summary).group(1)) if "failed" in summary else 0
    if process.returncode not in (0, 1):  # 4 or 5: a test was not found
        outcome = "not found"
    elif failed == len(tests):
        outcome = "caught"
    else:
        outcome = "partly" if failed else "MISSED"
    return outcome, seconds, summary


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m tools.broken_versions",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--case", nargs="*", default=None, help="Cases to run (default: all).")
    parser.add_argument("--list", action="store_true", help="List the cases and exit.")
    parser.add_argument("--tests_from", default=None,
                        help="Run the tests of this git revision instead of the working tree's.")
    parser.add_argument("--control", action="store_true",
                        help="Leave the code unbroken: every case's tests must then pass.")
    flags = parser.parse_args(argv)
    if flags.list:
        for case in CASES:
            print(f"{case.name}: {case.path} -> {', '.join(case.tests)}")
        return 0
    unknown = set(flags.case or ()) - {case.name for case in CASES}
    if unknown:
        parser.error(f"unknown case(s) {sorted(unknown)}; --list shows them.")
    cases = [case for case in CASES if flags.case is None or case.name in flags.case]
    rows = []
    for case in cases:
        with tempfile.TemporaryDirectory(prefix="broken_") as directory:
            root = pathlib.Path(directory) / "tree"
            copy_tree(root, flags.tests_from)
            if not flags.control:
                break_code(root, case)
            outcome, seconds, summary = run_tests(root, case.tests)
            if flags.control:
                outcome = {"MISSED": "passed", "caught": "FAILED"}.get(outcome, outcome)
        rows.append((case.name, outcome, seconds))
        print(f"{case.name}: {outcome} in {seconds:.0f} s ({summary})", flush=True)
    width = max(len(name) for name, _, _ in rows)
    print(f"\n{'case':<{width}}  outcome    seconds")
    for name, outcome, seconds in rows:
        print(f"{name:<{width}}  {outcome:<9}  {seconds:7.0f}")
    expected = "passed" if flags.control else "caught"
    return 0 if all(outcome == expected for _, outcome, _ in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
