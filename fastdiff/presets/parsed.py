"""The preset files, as ``tomllib`` parses them: written by ``python -m
fastdiff.presets`` from the ``.toml`` files beside it. Do not edit: edit
the ``.toml`` file and run that command (tests/test_schema.py checks it
is current)."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

DOCS: dict[str, Any] = {'rl-state': {'name': 'rl-state',
              'default_dtype': 'u8',
              'group': [{'key': 'A',
                         'title': 'CfC carry',
                         'hint': "The CfC cell's carried state (its attention context or "
                                 'hidden state) differs. It is carried from step to step, so '
                                 'every later step inherits a difference: if it is the first '
                                 'to differ, look at the kernels that update it (the '
                                 "attention's softmax and weighted sum, the CfC update) for "
                                 'parallel reductions, atomics, or memory read before it is '
                                 'written.',
                         'members': {'attn_context_d': {'dtype': 'f32',
                                                        'inputs': ['h_t_d@prev']},
                                     'h_t_d': {'dtype': 'f32',
                                               'inputs': ['h_t_d@prev', 'attn_context_d']}}},
                        {'key': 'B',
                         'title': 'PER state',
                         'hint': 'The prioritized replay state differs: the priority sum tree, '
                                 'the PRNG that samples it, or the indices it drew. If the '
                                 'priorities differ first, look at the priority update and the '
                                 'tree rebuild for parallel reductions (a single block with a '
                                 'fixed reduction order fixes them); if the sampling PRNG '
                                 'does, at its advance; if the indices differ while the tree '
                                 "and the PRNG match, at the sampling kernel's search of the "
                                 'tree.',
                         'members': {'priority_tree': {'dtype': 'f32',
                                                       'inputs': ['priority_tree@prev',
                                                                  'sample_indices@prev']},
                                     'sample_prng': {'dtype': 'u32',
                                                     'inputs': ['sample_prng@prev']},
                                     'sample_indices': {'dtype': 'i32',
                                                        'inputs': ['sample_prng',
                                                                   'priority_tree@prev']}}},
                        {'key': 'C',
                         'title': 'action sampling RNG',
                         'hint': 'The per-env PRNG states that pick actions. If they are the '
                                 "first to differ, look at the action kernel's xorshift "
                                 'update: it must consume the same upstream logits in both '
                                 'runs and advance unconditionally; a step taken only on some '
                                 'branches (depending on the chosen action) perturbs the '
                                 'stream.',
                         'members': {'action_prng_state': {'dtype': 'u32',
                                                           'inputs': ['action_prng_state@prev']},
                                     'iqn_prng_state': {'dtype': 'u32',
                                                        'inputs': ['iqn_prng_state@prev']}}},
                        {'key': 'D',
                         'title': 'LOB simulator and unit state',
                         'hint': 'The order-book simulator produced different state. Inspect '
                                 'the simulator kernels for atomics, parallel reductions and '
                                 'writes whose order depends on thread scheduling.',
                         'members': {'pyramid_units_count': {'dtype': 'i32',
                                                             'inputs': ['pyramid_units_count@prev',
                                                                        'actions']},
                                     'unit_entry_step': {'dtype': 'i32',
                                                         'inputs': ['unit_entry_step@prev',
                                                                    'actions']},
                                     'unit_entry_price': {'dtype': 'f32',
                                                          'inputs': ['unit_entry_price@prev',
                                                                     'actions']},
                                     'unit_lots': {'dtype': 'i32',
                                                   'inputs': ['unit_lots@prev', 'actions']},
                                     'unit_active': {'dtype': 'u8',
                                                     'inputs': ['unit_active@prev', 'actions']},
                                     'unit_initial_r': {'dtype': 'f32',
                                                        'inputs': ['unit_initial_r@prev',
                                                                   'actions']},
                                     'unit_trail_distance': {'dtype': 'f32',
                                                             'inputs': ['unit_trail_distance@prev',
                                                                        'actions']},
                                     'unit_prev_pos_lots': {'dtype': 'i32',
                                                            'inputs': ['unit_lots@prev']},
                                     'close_unit_index': {'dtype': 'i32',
                                                          'inputs': ['unit_active@prev',
                                                                     'actions']},
                                     'prev_realized_pnl': {'dtype': 'f32',
                                                           'inputs': ['prev_realized_pnl@prev',
                                                                      'unit_entry_price@prev',
                                                                      'actions']},
                                     'prev_position_lots': {'dtype': 'i32',
                                                            'inputs': ['prev_position_lots@prev',
                                                                       'actions']},
                                     'steps_since_done': {'dtype': 'i32',
                                                          'inputs': ['steps_since_done@prev',
                                                                     'dones@prev']},
                                     'trade_duration_emit': {'dtype': 'f32',
                                                             'inputs': ['steps_since_done',
                                                                        'actions']}}},
                        {'key': 'E',
                         'title': 'ISV controllers',
                         'hint': 'One of the controllers writing the ISV array is '
                                 'nondeterministic. Find the slot range that differs (popart '
                                 'sigma Welford state, Kelly win/loss EMAs, win-rate EMA, '
                                 'Page-Hinkley edge-decay) and check its update kernels for '
                                 'parallel reductions; a single block with a fixed reduction '
                                 'order fixes them.',
                         'members': {'isv_full': {'dtype': 'f32',
                                                  'inputs': ['isv_full@prev',
                                                             'rewards@prev']}}},
                        {'key': 'F',
                         'title': 'reward shaping and RL outputs',
                         'hint': 'Rewards, advantages or log-probs differ. If rewards differ '
                                 'while the RNG and simulator state match, the reward pipeline '
                                 'kernel itself is nondeterministic; if actions differ, the '
                                 'bug is upstream in action sampling; if advantages differ '
                                 'with equal rewards, suspect the advantage/return reduction.',
                         'members': {'rewards': {'dtype': 'f32',
                                                 'inputs': ['actions',
                                                            'unit_entry_price',
                                                            'prev_realized_pnl']},
                                     'raw_rewards': {'dtype': 'f32',
                                                     'inputs': ['actions',
                                                                'unit_entry_price',
                                                                'prev_realized_pnl']},
                                     'outcome_ema': {'dtype': 'f32',
                                                     'inputs': ['outcome_ema@prev', 'rewards']},
                                     'reward_abs': {'dtype': 'f32', 'inputs': ['rewards']},
                                     'dones': {'dtype': 'f32',
                                               'inputs': ['actions', 'steps_since_done@prev']},
                                     'actions': {'dtype': 'i32',
                                                 'inputs': ['action_prng_state',
                                                            'policy_logits']},
                                     'next_actions': {'dtype': 'i32',
                                                      'inputs': ['action_prng_state',
                                                                 'policy_logits']},
                                     'log_pi_old': {'dtype': 'f32',
                                                    'inputs': ['actions', 'policy_logits']},
                                     'advantages': {'dtype': 'f32',
                                                    'inputs': ['rewards',
                                                               'dones',
                                                               'advantages@prev']},
                                     'returns': {'dtype': 'f32',
                                                 'inputs': ['rewards',
                                                            'dones',
                                                            'returns@prev']},
                                     'session_pnl': {'dtype': 'f32',
                                                     'inputs': ['session_pnl@prev',
                                                                'prev_realized_pnl']},
                                     'consec_loss': {'dtype': 'f32',
                                                     'inputs': ['consec_loss@prev', 'rewards']},
                                     'cooldown_remaining': {'dtype': 'f32',
                                                            'inputs': ['cooldown_remaining@prev',
                                                                       'consec_loss']},
                                     'ph_mu': {'dtype': 'f32',
                                               'inputs': ['ph_mu@prev', 'ph_count', 'rewards']},
                                     'ph_count': {'dtype': 'f32',
                                                  'inputs': ['ph_count@prev', 'dones']},
                                     'ph_m': {'dtype': 'f32',
                                              'inputs': ['ph_m@prev', 'ph_mu', 'rewards']},
                                     'ph_mmin': {'dtype': 'f32',
                                                 'inputs': ['ph_mmin@prev', 'ph_m']},
                                     'ph_stat': {'dtype': 'f32',
                                                 'inputs': ['ph_m', 'ph_mmin']}}}]}}
