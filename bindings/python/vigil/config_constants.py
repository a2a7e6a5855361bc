"""smdebug's configuration constants (``smdebug.core.config_constants``): file names, environment
variable names and defaults, as smdebug 1.0.34 defines them (the API surface test checks each value). SageMaker's container facts
among them come from the host's table (``_vigil.sagemaker``, host/format/sagemaker_container.h)."""
from . import _vigil

_sagemaker = _vigil.sagemaker

CALLABLE_CACHE_ENV_VAR = 'SMDEBUG_KERAS_CALLABLE_CACHE_TYPE'
CHECKPOINT_CONFIG_FILE_PATH_ENV_VAR = _sagemaker.CHECKPOINT_CONFIG_VARIABLE
CHECKPOINT_DIR_KEY = 'LocalPath'
CLAIM_FILENAME = 'claim.smd'
CONFIG_COLLECTION_CONFIG_KEY = 'CollectionConfigurations'
CONFIG_COLLECTION_NAME_KEY = 'CollectionName'
CONFIG_COLLECTION_PARAMS_KEY = 'CollectionParameters'
CONFIG_DRYRUN_KEY = 'dry_run'
CONFIG_FILE_PATH_ENV_STR = _sagemaker.DEBUG_HOOK_CONFIG_VARIABLE
CONFIG_HOOK_PARAMS_KEY = 'HookParameters'
CONFIG_INCLUDE_REGEX_KEY = 'include_regex'
CONFIG_INCLUDE_WORKERS_KEY = 'include_workers'
CONFIG_OUTDIR_KEY = 'LocalPath'
CONFIG_RDN_CFG_KEY = 'reduction_config'
CONFIG_REDUCTION_CONFIGS_KEY = 'reduction_configs'
CONFIG_SAVE_ALL_KEY = 'save_all'
CONFIG_SAVE_CONFIGS_KEY = 'save_configs'
DEFAULT_CALLABLE_CACHE = 'CACHE_PER_MODE'
DEFAULT_CHECKPOINT_CONFIG_FILE = _sagemaker.default_config_path(_sagemaker.CHECKPOINT_CONFIG_FILE)
DEFAULT_COLLECTIONS_FILE_NAME = 'worker_0_collections.json'
DEFAULT_CONFIG_FILE_PATH = _sagemaker.default_config_path(_sagemaker.DEBUG_HOOK_CONFIG_FILE)
DEFAULT_RESOURCE_CONFIG_FILE = _sagemaker.default_config_path(_sagemaker.RESOURCE_CONFIG_FILE)
DEFAULT_SAGEMAKER_METRICS_PATH = 'SAGEMAKER_METRICS_DIRECTORY'
DEFAULT_SAGEMAKER_OUTDIR = _sagemaker.DEBUG_OUTPUT_DIR
DEFAULT_SAGEMAKER_TENSORBOARD_PATH = _sagemaker.default_config_path(_sagemaker.TENSORBOARD_CONFIG_FILE)
DEFAULT_SAVED_COLLECTIONS = ['losses']
DEFAULT_WORKER_NAME = 'worker_0'
EXPORT_TENSORBOARD_KEY = 'export_tensorboard'
INCOMPLETE_STEP_WAIT_WINDOW_DEFAULT = 1000
INCOMPLETE_STEP_WAIT_WINDOW_KEY = _sagemaker.INCOMPLETE_STEP_WAIT_WINDOW_VARIABLE
LATEST_GLOBAL_STEP_SAVED = 'latest-global-step-saved'
LATEST_GLOBAL_STEP_SEEN = 'latest-global-step-seen'
LATEST_MODE_STEP = 'latest-mode-step'
LOG_DUPLICATION_THRESHOLD = 3
METADATA_FILENAME = 'metadata.json'
METADATA_FILENAME_S3_UPLOADED = 'metadata.json.sagemaker-uploaded'
MISSING_EVENT_FILE_RETRY_LIMIT = 100
MISSING_EVENT_FILE_RETRY_LIMIT_KEY = 'SMDEBUG_MISSING_EVENT_FILE_RETRY_LIMIT'
PAPERMILL_EXECUTION_ENV_VAR = 'PAPERMILL_EXECUTION'
PROFILER_REPORT_VERSION = 'profiler_report_v1'
PROFILER_TELEMETRY_URL = 'https://sm-profiler-report-{region}.s3.{region}.amazonaws.com'
TENSORBOARD_CONFIG_FILE_PATH_ENV_STR = _sagemaker.TENSORBOARD_CONFIG_VARIABLE
TENSORBOARD_DIR_KEY = 'tensorboard_dir'
TRAINING_END_DELAY_REFRESH_DEFAULT = 1
TRAINING_END_DELAY_REFRESH_KEY = _sagemaker.TRAINING_END_DELAY_REFRESH_VARIABLE
TRAINING_RUN = 'training-run'
