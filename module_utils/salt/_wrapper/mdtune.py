"""
The mdtune execution functions over salt-ssh, with the target's pillar.

salt-ssh runs a custom execution function on the target as ``salt-call
--local``, where the pillar is empty: a plain ``salt-ssh HOST mdtune.query``
would compare with mdtune's defaults and ignore ``mdtune:root`` and
``mdtune:binary``. This wrapper runs on the master instead, where salt-ssh has
compiled the target's pillar (``__pillar__``). It translates the pillar
``mdtune`` with the execution module's own ``desired()`` (the file
``salt://_modules/mdtune.py``, fetched from the master's file server and loaded
on the master, so there is one translation) and calls the target's execution
function of the same name with that desired state as keyword arguments and
``from_pillar=False``: the arguments given override the pillar key by key, as
on a minion, and the target's own (empty) pillar plays no part.

Install: this file in the master's ``extension_modules`` as
``wrapper/mdtune.py``, where salt-ssh loads wrappers; by default, on Salt 3006
and 3008 alike::

    install -D -m 0644 /usr/share/susemanager/salt/_wrapper/mdtune.py \
        /var/cache/salt/master/extmods/wrapper/mdtune.py

(``mdtune-salt-VERSION.tar.gz`` unpacked at ``/`` puts it there too). On Salt
3007 and later ``salt-run saltutil.sync_wrapper`` also copies it there from
``salt://_wrapper/``. The master option ``wrapper_dirs`` does not work on 3006:
salt-ssh drops it from the options it loads wrappers with. Without the wrapper
the execution module's functions that read the pillar refuse to run over
salt-ssh and say how to install it.

CLI Example:

.. code-block:: bash

    salt-ssh '*' mdtune.query
    salt-ssh '*' mdtune.apply test=True
    salt-ssh '*' mdtune.binary_path
"""

import importlib.util

import salt.client.ssh.wrapper
import salt.utils.args
import salt.utils.data
from salt.exceptions import CommandExecutionError

__virtualname__ = "mdtune"

# The execution module, as the master's file server serves it to the targets.
_MODULE = "salt://_modules/mdtune.py"

# The arguments of apply and query that are Salt's, not the target function's.
_OWN = ("from_pillar", "kwargs")


def __virtual__():
    return __virtualname__


def apply(
    arrays=None,
    thread_policy=None,
    speed_limit_min=None,
    speed_limit_max=None,
    sync_io_depth=None,
    persist=None,
    reason=None,
    root=None,
    check_mode=None,
    diff=None,
    test=None,
    binary=None,
    from_pillar=True,
    measure=None,
    revert_if_slower=None,
    **kwargs,
):
    """
    The target's ``mdtune.apply`` with the pillar's desired state (see the
    execution module for the arguments, ``measure`` and ``revert_if_slower``
    included).

    CLI Example:

    .. code-block:: bash

        salt-ssh '*' mdtune.apply test=True
    """
    given = _named(locals())
    return _target("apply", _merge(given, kwargs, from_pillar))


def query(
    arrays=None,
    thread_policy=None,
    speed_limit_min=None,
    speed_limit_max=None,
    sync_io_depth=None,
    persist=None,
    reason=None,
    root=None,
    diff=None,
    binary=None,
    from_pillar=True,
    **kwargs,
):
    """
    The target's ``mdtune.query`` against the pillar's desired state: the
    compliance check over salt-ssh.

    CLI Example:

    .. code-block:: bash

        salt-ssh '*' mdtune.query
    """
    merged = _merge(_named(locals()), kwargs, from_pillar)
    # A measurement is a present run's: the pillar's does not reach a query.
    for key in ("measure", "revert_if_slower"):
        if key not in kwargs:
            merged.pop(key, None)
    return _target("query", merged)


def revert(root=None, check_mode=None, diff=None, test=None, binary=None, **kwargs):
    """
    The target's ``mdtune.revert``, in the pillar's ``mdtune:root`` with its
    ``mdtune:binary``.

    CLI Example:

    .. code-block:: bash

        salt-ssh '*' mdtune.revert test=True
    """
    host = {key: value for key, value in desired().items() if key in ("root", "binary")}
    given = dict(root=root, check_mode=check_mode, diff=diff, test=test, binary=binary)
    host.update(_given(given, kwargs))
    return _target("revert", host)


def binary_path(binary=None):
    """
    The mdtune binary the target would run, the pillar's ``mdtune:binary`` (or
    the formula's ``mdtune:deploy`` target) first.

    CLI Example:

    .. code-block:: bash

        salt-ssh '*' mdtune.binary_path
    """
    binary = binary or desired().get("binary")
    return _target("binary_path", {"binary": binary} if binary else {})


def desired(fresh=False):
    """
    The desired state the target's pillar ``mdtune`` describes, translated on
    the master by the execution module's ``desired()``. ``fresh`` is accepted
    for the execution module's signature: salt-ssh compiles the pillar for
    every run.

    CLI Example:

    .. code-block:: bash

        salt-ssh '*' mdtune.desired
    """
    module = _execution_module()
    module.__pillar__ = __pillar__
    module.__opts__ = __opts__
    return module.desired()


def _named(args):
    """The named arguments of apply or query, which the target's functions take by name too."""
    return {key: value for key, value in args.items() if key not in _OWN}


def _given(given, kwargs):
    """The arguments given: the named ones set, and the others but Salt's own."""
    args = {key: value for key, value in given.items() if value is not None}
    args.update(salt.utils.args.clean_kwargs(**kwargs))
    return args


def _merge(given, kwargs, from_pillar):
    """The pillar's desired state (when from_pillar), overridden key by key by the arguments."""
    args = desired() if salt.utils.data.is_true(from_pillar) else {}
    args.update(_given(given, kwargs))
    args["from_pillar"] = False
    return args


def _execution_module():
    """The execution module the targets run, loaded on the master (once per run)."""
    if "mdtune.module" not in __context__:
        fsclient = __salt__.fsclient
        saltenv = __opts__.get("saltenv") or "base"
        path = fsclient.cache_file(_MODULE, saltenv) if fsclient else None
        if not path:
            raise CommandExecutionError(
                f"mdtune: {_MODULE} is not in the master's file roots ({saltenv}): install "
                "the mdtune Salt modules next to this wrapper"
            )
        spec = importlib.util.spec_from_file_location("mdtune_execution_module", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        __context__["mdtune.module"] = module
    return __context__["mdtune.module"]


def _target(fun, args):
    """Call the target's execution function mdtune.FUN (not this wrapper's) with ARGS."""
    wrapper = __salt__
    kwargs = dict(wrapper.kwargs)
    id_ = kwargs.pop("id_")
    host = kwargs.pop("host")
    remote = salt.client.ssh.wrapper.FunctionWrapper(
        wrapper.opts,
        id_,
        host,
        mods=wrapper.mods,
        fsclient=wrapper.fsclient,
        minion_opts=wrapper.minion_opts,
        **kwargs,
    )
    return remote[f"mdtune.{fun}"](**args)
