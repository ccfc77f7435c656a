"""LLM.get_tokenizer(): the model's tokenizer (from the GGUF, as `stet serve`
uses it) with the method names of Hugging Face's tokenizers, which vLLM's
get_tokenizer() returns: encode, decode, apply_chat_template,
convert_ids_to_tokens, bos/eos ids. The chat template is the server's: same
renderer, same limits, same BOS handling.
"""
import json as _json
from typing import Any, Dict, List, Optional, Union


def _text(b: bytes) -> str:
    return b.decode("utf-8", errors="replace")


class Tokenizer:
    def __init__(self, engine):
        self._engine = engine

    # --- ids <-> text ---
    def encode(self, text: str, add_special_tokens: bool = True) -> List[int]:
        """Token ids of `text`; BOS as the model asks with add_special_tokens;
        special-token text ("<|im_start|>") becomes its id, as in HF tokenizers."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, not {type(text).__name__}")
        return self._engine.encode(text, add_special_tokens, True)

    def __call__(self, text: str, add_special_tokens: bool = True) -> Dict[str, List[int]]:
        return {"input_ids": self.encode(text, add_special_tokens)}

    def decode(self, token_ids: List[int], skip_special_tokens: bool = False) -> str:
        return _text(self._engine.decode(list(token_ids), not skip_special_tokens))

    def convert_ids_to_tokens(self, ids: Union[int, List[int]]):
        if isinstance(ids, int):
            return _text(self._engine.token_text(ids))
        return [_text(self._engine.token_text(i)) for i in ids]

    def piece(self, token_id: int) -> str:
        """The text one token stands for (what Logprob.decoded_token holds)."""
        return _text(self._engine.piece(token_id))

    @property
    def bos_token_id(self) -> Optional[int]:
        return self._engine.bos if self._engine.bos >= 0 else None

    @property
    def eos_token_id(self) -> Optional[int]:
        return self._engine.eos if self._engine.eos >= 0 else None

    @property
    def eog_token_ids(self) -> List[int]:
        """Every id that ends generation (EOS, end-of-turn, ...)."""
        return list(self._engine.eog_ids)

    @property
    def vocab_size(self) -> int:
        return self._engine.n_vocab

    def __len__(self) -> int:
        return self._engine.n_vocab

    @property
    def chat_template(self) -> str:
        return self._engine.chat_template

    # --- chat ---
    def apply_chat_template(self, conversation: List[Dict[str, Any]],
                            tools: Optional[List[Dict[str, Any]]] = None,
                            add_generation_prompt: bool = False, tokenize: bool = True,
                            continue_final_message: bool = False,
                            chat_template_kwargs: Optional[Dict[str, Any]] = None,
                            clock: Optional[int] = None, **kwargs):
        """The conversation rendered by the model's chat template as `stet serve`
        renders it (ids as its chat endpoint tokenizes them with tokenize=True).
        Extra keyword arguments become template variables, as in transformers;
        ``clock`` (Unix seconds) is the instant strftime_now() and date_string
        see (None: now, as the server without metadata.stet_clock)."""
        text = render_chat(self._engine, conversation, tools, add_generation_prompt,
                           continue_final_message, {**(chat_template_kwargs or {}), **kwargs},
                           clock)
        return self._engine.chat_tokenize(text) if tokenize else text


def render_chat(engine, conversation, tools, add_generation_prompt, continue_final_message,
                kwargs, clock=None) -> str:
    """The rendered conversation, by the server's ChatPrompt with these options
    (RequestError naming the field when refused)."""
    from .errors import RequestError
    try:
        messages_json = _json.dumps(conversation, ensure_ascii=False)
        tools_json = "" if not tools else _json.dumps(tools, ensure_ascii=False)
        kwargs_json = "" if not kwargs else _json.dumps(kwargs, ensure_ascii=False)
    except (TypeError, ValueError) as e:
        raise RequestError(f"messages: not JSON-serializable ({e})", "messages") from None
    return _text(engine.render_chat(messages_json, tools_json, add_generation_prompt,
                                    continue_final_message, kwargs_json,
                                    None if clock is None else int(clock)))
