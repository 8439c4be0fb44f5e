//! The desired state: the module's JSON input validated into a [`Spec`] before anything on the
//! host is read or written (docs/reference.md §2). Every refusal names the key, the value and
//! what is allowed. `raw` checks the text before it is parsed (its size, repeated keys);
//! `desired` builds the `Spec` from the top-level keys, `entry` reads one element of `arrays` and
//! `policy` the `thread_policy`, `reason` the why a person gives, each with the typed values and the [`SpecError`] of `values`.
//! Checks that need the live host (a name that matches nothing, a setting the array's level
//! lacks) belong to the plan.

mod desired;
mod entry;
mod policy;
mod raw;
mod reason;
mod values;

pub use desired::{Spec, State, TOP_KEYS};
pub use entry::{Entry, NameSelector, ENTRY_KEYS};
pub use policy::{AutoParams, Combine, ThreadPolicy, POLICY_KEYS};
pub use raw::MAX_INPUT;
pub use reason::MAX_REASON;
pub use values::{SpecError, Want, MAX_THREADS};
