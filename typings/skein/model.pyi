from collections.abc import Iterable, Iterator, Mapping
from datetime import datetime, timedelta
from typing import Any, ClassVar, Self, TypeVar

_E = TypeVar("_E")

class _EnumMeta(type):
    def __iter__(cls: type[_E]) -> Iterator[_E]: ...
    def __len__(cls) -> int: ...

class Enum(metaclass=_EnumMeta):
    """Skein's string enum: a member equals its name, in any case."""
    def __new__(cls, x: str | Self) -> Self: ...
    @classmethod
    def values(cls) -> tuple[str, ...]: ...

class ApplicationState(Enum):
    NEW: ClassVar[ApplicationState]
    NEW_SAVING: ClassVar[ApplicationState]
    SUBMITTED: ClassVar[ApplicationState]
    ACCEPTED: ClassVar[ApplicationState]
    RUNNING: ClassVar[ApplicationState]
    FINISHED: ClassVar[ApplicationState]
    FAILED: ClassVar[ApplicationState]
    KILLED: ClassVar[ApplicationState]

class FinalStatus(Enum):
    SUCCEEDED: ClassVar[FinalStatus]
    KILLED: ClassVar[FinalStatus]
    FAILED: ClassVar[FinalStatus]
    UNDEFINED: ClassVar[FinalStatus]

class ContainerState(Enum):
    WAITING: ClassVar[ContainerState]
    REQUESTED: ClassVar[ContainerState]
    RUNNING: ClassVar[ContainerState]
    SUCCEEDED: ClassVar[ContainerState]
    FAILED: ClassVar[ContainerState]
    KILLED: ClassVar[ContainerState]

class FileType(Enum):
    FILE: ClassVar[FileType]
    ARCHIVE: ClassVar[FileType]

class FileVisibility(Enum):
    APPLICATION: ClassVar[FileVisibility]
    PUBLIC: ClassVar[FileVisibility]
    PRIVATE: ClassVar[FileVisibility]

class LogLevel(Enum):
    ALL: ClassVar[LogLevel]
    TRACE: ClassVar[LogLevel]
    DEBUG: ClassVar[LogLevel]
    INFO: ClassVar[LogLevel]
    WARN: ClassVar[LogLevel]
    ERROR: ClassVar[LogLevel]
    FATAL: ClassVar[LogLevel]
    OFF: ClassVar[LogLevel]

class Specification:
    def to_dict(self, skip_nulls: bool = True) -> dict[str, Any]: ...
    def to_json(self, skip_nulls: bool = True) -> str: ...
    def to_yaml(self, skip_nulls: bool = True) -> str: ...
    @classmethod
    def from_dict(cls, obj: Mapping[str, Any], **kwargs: Any) -> Self: ...

class Security(Specification):
    def __init__(self, cert_file: str | None = None, key_file: str | None = None,
                 cert_bytes: bytes | None = None, key_bytes: bytes | None = None) -> None: ...
    @classmethod
    def from_default(cls) -> Self: ...
    @classmethod
    def from_directory(cls, directory: str) -> Self: ...
    @classmethod
    def new_credentials(cls) -> Self: ...
    def to_directory(self, directory: str, force: bool = False) -> None: ...

class Resources(Specification):
    memory: int  # MiB; the setter also takes a string with units ("5 GiB")
    vcores: int
    gpus: int
    fpgas: int
    def __init__(self, memory: int | str, vcores: int, gpus: int = 0, fpgas: int = 0) -> None: ...

class File(Specification):
    source: str
    type: FileType
    visibility: FileVisibility
    size: int
    timestamp: int
    def __init__(self, source: str, type: str | FileType = "infer",
                 visibility: str | FileVisibility = ..., size: int = 0, timestamp: int = 0) -> None: ...

class Service(Specification):
    resources: Resources
    script: str
    instances: int
    files: dict[str, File]
    env: dict[str, str]
    depends: set[str]
    max_restarts: int
    allow_failures: bool
    node_label: str
    nodes: list[str]
    racks: list[str]
    relax_locality: bool
    def __init__(self, resources: Resources, script: str, instances: int = 1,
                 files: Mapping[str, File | str] | None = None, env: Mapping[str, str] | None = None,
                 depends: Iterable[str] | None = None, max_restarts: int = 0, allow_failures: bool = False,
                 node_label: str = "", nodes: list[str] | None = None, racks: list[str] | None = None,
                 relax_locality: bool = False) -> None: ...

class ACLs(Specification):
    enable: bool
    view_users: list[str]
    view_groups: list[str]
    modify_users: list[str]
    modify_groups: list[str]
    ui_users: list[str]
    def __init__(self, enable: bool = False, view_users: list[str] | None = None,
                 view_groups: list[str] | None = None, modify_users: list[str] | None = None,
                 modify_groups: list[str] | None = None, ui_users: list[str] | None = None) -> None: ...

class Master(Specification):
    resources: Resources
    script: str
    files: dict[str, File]
    env: dict[str, str]
    log_level: LogLevel
    log_config: File | None
    security: Security | None
    def __init__(self, resources: Resources | None = None, script: str = "",
                 files: Mapping[str, File | str] | None = None, env: Mapping[str, str] | None = None,
                 log_level: str | LogLevel = ..., log_config: str | File | None = None,
                 security: Security | None = None) -> None: ...

class ApplicationSpec(Specification):
    services: dict[str, Service]
    master: Master
    name: str
    queue: str
    user: str
    node_label: str
    tags: set[str]
    file_systems: list[str]
    acls: ACLs
    max_attempts: int
    def __init__(self, services: Mapping[str, Service] | None = None, master: Master | None = None,
                 name: str = "skein", queue: str = "default", user: str = "", node_label: str = "",
                 tags: Iterable[str] | None = None, file_systems: list[str] | None = None,
                 acls: ACLs | None = None, max_attempts: int = 1) -> None: ...
    @classmethod
    def from_file(cls, path: str, format: str = "infer") -> Self: ...
    def to_file(self, path: str, format: str = "infer", skip_nulls: bool = True) -> None: ...

class ResourceUsageReport:
    memory_seconds: int
    vcore_seconds: int
    num_used_containers: int
    needed_resources: Resources
    reserved_resources: Resources
    used_resources: Resources

class ApplicationReport:
    id: str
    name: str
    user: str
    queue: str
    tags: set[str]
    host: str
    port: int
    tracking_url: str
    state: ApplicationState
    final_status: FinalStatus
    progress: float
    usage: ResourceUsageReport
    diagnostics: str
    start_time: datetime | None  # None when the time is 0 (not started)
    finish_time: datetime | None  # None until the application finished
    @property
    def runtime(self) -> timedelta: ...

class Container:
    service_name: str
    instance: int
    state: ContainerState
    yarn_container_id: str
    yarn_node_http_address: str
    start_time: datetime | None
    finish_time: datetime | None
    exit_message: str
    @property
    def id(self) -> str: ...
