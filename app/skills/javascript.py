"""JavaScript function: admin-written JavaScript with declared arguments, exposed to the agent as a tool.

The code runs in the sandbox (app.guards.sandbox): a fresh V8 isolate in a child process, with this skill's
time and memory caps, and no require, process, fetch, files or sockets.
"""

from __future__ import annotations

from typing import Any, Literal

from jsonschema import Draft202012Validator
from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic_ai import ModelRetry, Tool
from pydantic_ai.exceptions import ToolFailed
from pydantic_ai.toolsets import FunctionToolset

from app.guards.sandbox import SandboxLimits, SandboxMemoryExceeded, SandboxTimeout, ScriptError, run_function
from app.runtime.contract import Skill, SkillContext

ArgumentType = Literal["string", "number", "integer", "boolean", "array", "object"]
MB = 1024 * 1024

# A parameter becomes a `var`, so it cannot be a reserved word.
RESERVED = frozenset(
    "arguments await break case catch class const continue debugger default delete do else enum eval export "
    "extends false finally for function if implements import in instanceof interface let new null package "
    "private protected public return static super switch this throw true try typeof var void while with "
    "yield undefined NaN Infinity".split()
)


class Argument(BaseModel):
    model_config = ConfigDict(use_attribute_docstrings=True, extra="forbid")

    name: str = Field(pattern=r"^[A-Za-z_$][A-Za-z0-9_$]*$", max_length=64)
    """Name of the argument; the code reads it as a variable of that name."""
    type: ArgumentType = "string"
    """JSON type the model must pass."""
    description: str = Field("", max_length=500)
    """What the model should pass, in a sentence."""
    required: bool = True
    """Whether the model must always pass it (otherwise the variable may be undefined)."""

    @field_validator("name")
    @classmethod
    def not_reserved(cls, value: str) -> str:
        if value in RESERVED:
            raise ValueError(f"{value!r} is a JavaScript reserved word; choose another name.")
        return value


class Config(BaseModel):
    model_config = ConfigDict(use_attribute_docstrings=True, extra="forbid")

    name: str = Field("count_words", pattern=r"^[A-Za-z][A-Za-z0-9_]*$", max_length=64, title="Tool name")
    """Name of the tool the model calls (letters, digits and _)."""
    description: str = Field("Count the words of a text.", min_length=1, max_length=1_000,
                             title="Description", json_schema_extra={"widget": "textarea"})
    """What the tool does and when to use it; the model reads this to decide."""
    arguments: list[Argument] = Field([Argument(name="text", description="The text whose words to count.")],
                                      title="Arguments")
    """Arguments as JSON: [{"name": "text", "type": "string", "description": "...", "required": true}]."""
    code: str = Field("return text.split(/\\s+/).filter(Boolean).length;", min_length=1, max_length=50_000,
                      title="Code", json_schema_extra={"widget": "code"})
    """Body of an async function: each argument is a variable; `return` the result (JSON values)."""
    timeout_seconds: float = Field(2.0, gt=0, le=30, title="Time limit (seconds)")
    """Seconds one call may run before it is stopped."""
    max_memory_mb: int = Field(64, ge=16, le=1_024, title="Memory limit (MB)")
    """Megabytes of JavaScript memory one call may use before it is stopped."""

    @field_validator("arguments")
    @classmethod
    def distinct_names(cls, value: list[Argument]) -> list[Argument]:
        names = [argument.name for argument in value]
        if repeated := sorted({name for name in names if names.count(name) > 1}):
            raise ValueError(f"Each argument needs its own name; repeated: {', '.join(repeated)}.")
        return value


def parameters_schema(arguments: list[Argument]) -> dict[str, Any]:
    """Return the JSON schema of the tool's arguments, as the model sees it."""
    return {
        "type": "object",
        "properties": {
            a.name: {"type": a.type, **({"description": a.description} if a.description else {})}
            for a in arguments
        },
        "required": [a.name for a in arguments if a.required],
        "additionalProperties": False,
    }


def build(config: Config, ctx: SkillContext) -> FunctionToolset:
    schema = parameters_schema(config.arguments)
    validator = Draft202012Validator(schema)
    limits = SandboxLimits(timeout=config.timeout_seconds, max_memory=config.max_memory_mb * MB)
    params = [a.name for a in config.arguments]

    async def call(**args: Any) -> Any:
        # Tool.from_schema skips validation: check the arguments against the declared schema here.
        if problems := [error.message for error in validator.iter_errors(args)]:
            raise ModelRetry(f"The arguments do not fit {config.name}: {'; '.join(problems[:5])}.")
        try:
            result = await run_function(config.code, args, limits=limits, params=params)
        except SandboxTimeout as error:
            raise ToolFailed(f"{config.name} hit its time limit: {error}") from error
        except SandboxMemoryExceeded as error:
            raise ToolFailed(f"{config.name} hit its memory limit: {error}") from error
        except ScriptError as error:
            raise ToolFailed(f"{config.name} failed: {error}") from error
        if result.logs:
            return {"result": result.value, "console": result.logs}
        return result.value

    tool = Tool.from_schema(call, name=config.name, description=config.description, json_schema=schema)
    return FunctionToolset([tool])


skill = Skill(name="javascript", title="JavaScript function", config=Config, build=build,
              description=__doc__.strip().splitlines()[0])
