"""The original document's preprocess.py (its ConfigMap ``preprocess-script``), as the
baseline ``rlgen data prepare`` is timed against: ``load_from_disk``, ``Dataset.map`` with
``num_proc=8``, ``to_parquet``. The document leaves ``data_source`` and ``extract_solution``
undefined; they are defined here as verl's GSM8K example does (examples/data_preprocess/
gsm8k.py). ``NUM_PROC`` overrides the 8 processes. Benchmark code, not part of rlgen."""
import os
import re

from datasets import load_from_disk

data_source = "openai/gsm8k"


def extract_solution(solution_str):
    solution = re.search("#### (\\-?[0-9\\.\\,]+)", solution_str)
    assert solution is not None
    final_solution = solution.group(0)
    final_solution = final_solution.split("#### ")[1].replace(",", "")
    return final_solution


def preprocess_dataset(input_dir, output_dir):
    dataset = load_from_disk(input_dir)
    train_dataset = dataset["train"]
    test_dataset = dataset["test"]
    instruction_following = "Let's think step by step and output the final answer after `####`."

    def make_map_fn(split):
        def process_fn(example, idx):
            question_raw = example.pop("question")
            question = question_raw + " " + instruction_following
            answer_raw = example.pop("answer")
            solution = extract_solution(answer_raw)
            data = {
                "data_source": data_source,
                "agent_name": "tool_agent",
                "prompt": [
                    {
                        "role": "system",
                        "content": (
                            "You are a math expert. You are given a question and you need to solve it step by step. "
                            "Reasoning step by step before any tool call. "
                            "You should use the `calc_gsm8k_reward` tool after step by step solving the question, "
                            "before generate final answer at least once and refine your answer if necessary. "
                            "Put your final answer in the format of `#### <answer>`."
                        ),
                    },
                    {"role": "user", "content": question},
                ],
                "ability": "math",
                "reward_model": {"style": "rule", "ground_truth": solution},
                "extra_info": {
                    "split": split,
                    "index": idx,
                    "answer": answer_raw,
                    "question": question_raw,
                    "need_tools_kwargs": True,
                    "tools_kwargs": {"calc_gsm8k_reward": {"create_kwargs": {"ground_truth": solution}}},
                    "interaction_kwargs": {"query": question, "ground_truth": solution},
                },
            }
            return data

        return process_fn

    num_proc = int(os.environ.get("NUM_PROC", "8"))
    train_dataset = train_dataset.map(function=make_map_fn("train"), with_indices=True, num_proc=num_proc)
    test_dataset = test_dataset.map(function=make_map_fn("test"), with_indices=True, num_proc=num_proc)
    os.makedirs(output_dir, exist_ok=True)
    train_dataset.to_parquet(os.path.join(output_dir, "train.parquet"))
    test_dataset.to_parquet(os.path.join(output_dir, "test.parquet"))
    return output_dir


if __name__ == "__main__":
    preprocess_dataset(os.environ.get("INPUT_PATH", "/data/raw"), os.environ.get("OUTPUT_PATH", "/data/processed"))
