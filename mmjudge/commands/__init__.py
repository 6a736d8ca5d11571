"""Sub-commands of the ``mmjudge`` CLI, one module each (see :mod:`mmjudge.cli`): name → the function
that adds the sub-command's parser to the CLI's sub-parsers."""

from mmjudge.registry import Registry

COMMANDS = Registry(
    "command",
    {
        "compare": "mmjudge.commands.compare:add_parser",
        "convert_longclip": "mmjudge.commands.convert_longclip:add_parser",
        "dataset": "mmjudge.commands.dataset:add_parser",
        "judge_card": "mmjudge.commands.judge_card:add_parser",
        "leaderboard": "mmjudge.commands.leaderboard:add_parser",
        "leaderboard_worker": "mmjudge.commands.leaderboard_worker:add_parser",
        "metaeval": "mmjudge.commands.metaeval:add_parser",
        "register": "mmjudge.commands.register:add_parser",
        "reproduce": "mmjudge.commands.reproduce:add_parser",
        "score": "mmjudge.commands.score:add_parser",
        "serve": "mmjudge.commands.serve:add_parser",
        "space": "mmjudge.commands.space:add_parser",
        "train_vela": "mmjudge.commands.train_vela:add_parser",
    },
)
