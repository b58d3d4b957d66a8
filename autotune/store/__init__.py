"""Everything kept: the results file (store.db), its rows (store.results) and the claims that
let many workers share it (store.claims). All SQL of the results database lives here."""
from autotune.store.claims import (
                                   CLAIM_TTL_S,
                                   DONE,
                                   MINE,
                                   TAKEN,
                                   Claimed,
                                   Claims,
                                   FileClaims,
                                   HostAndServer,
                                   Owner,
                                   ServerClaims,
                                   alive,
                                   claims_for,
                                   shares_claims,
)
from autotune.store.db import (
                                   DEFAULT_DB,
                                   KEY,
                                   check_path,
                                   default_path,
                                   immediate,
                                   now,
                                   open_db,
                                   open_readonly,
                                   path_of,
                                   shipped_databases,
                                   sqlite_tables,
)
from autotune.store.model_rows import shipped_model_rows
from autotune.store.nearest import nearest_shapes, recorded_shapes
from autotune.store.profiles import insert_profile, profiles
from autotune.store.results import (
                                   Key,
                                   Redo,
                                   admitted_families,
                                   backends_with_ok,
                                   baselines,
                                   best,
                                   copy_result,
                                   faster_than_library,
                                   find_key,
                                   gpus,
                                   insert_baseline,
                                   insert_result,
                                   insert_source,
                                   insert_trial,
                                   key_of,
                                   record_result,
                                   result_by_id,
                                   results,
                                   source,
                                   trial_results,
)

__all__ = ["CLAIM_TTL_S", "DEFAULT_DB", "DONE", "KEY", "MINE", "TAKEN", "Claimed", "Claims", "FileClaims",
           "HostAndServer", "Key", "Owner", "Redo", "ServerClaims", "admitted_families", "alive", "backends_with_ok", "baselines", "best",
           "check_path", "default_path", "claims_for", "copy_result", "find_key", "gpus", "immediate", "insert_baseline",
           "insert_profile", "insert_result", "insert_source", "insert_trial", "key_of", "nearest_shapes", "now",
           "open_db", "open_readonly", "path_of", "profiles", "record_result", "recorded_shapes", "result_by_id", "shipped_databases", "shipped_model_rows", "sqlite_tables",
           "faster_than_library", "results", "shares_claims", "source", "trial_results"]
