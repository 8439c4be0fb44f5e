//! The desired state: the module's JSON input validated into a [`Spec`] before anything on the
//! host is read or written (docs/reference.md §2). Every refusal names the key, the value and
//! what is allowed. `keys` lists the keys of each level once, and `schema` prints them with the
//! tunables' rows for `mdtune --schema`; `raw` checks the text before it is parsed (its size,
//! repeated keys); `desired` builds the `Spec` from the top-level keys, `entry` reads one element
//! of `arrays`, `boost` an entry's `sync_boost`, `limits` the sync limits of both, `policy` the `thread_policy` and `reason`
//! the why a person gives, each with the typed values and the [`SpecError`]
//! of `values`. Checks that need the live host (a name that matches nothing, a setting the
//! array's level lacks) belong to the plan.

mod boost;
mod desired;
mod entry;
mod keys;
mod limits;
mod policy;
mod raw;
mod reason;
mod schema;
mod values;

pub use boost::{Boost, BOOST_KEYS, DURING_ALLOWED, DURING_DEFAULT};
pub use desired::{Spec, State, MEASURE_MAX};
pub use entry::{Entry, NameSelector};
pub use keys::{
    own_keys, Key, Role, DESIRED_KEYS, ENTRY_EXTRAS, ENTRY_KEYS, POLICY, POLICY_KEYS, SELECTORS,
    TOP_KEYS,
};
pub use policy::{AutoParams, Combine, ThreadPolicy};
pub use raw::MAX_INPUT;
pub use reason::MAX_REASON;
pub use schema::schema;
pub use values::{SpecError, Want, MAX_THREADS};
