//! The desired state: the module's JSON input validated into a [`Spec`] before anything on the
//! host is read or written (docs/reference.md §2). Every refusal names the key, the value and
//! what is allowed. Checks that need the live host (a name that matches nothing, a setting the
//! array's level lacks) belong to the plan.

mod desired;
mod entry;
mod input;
mod policy;
mod strict;

pub use desired::{Spec, State, TOP_KEYS};
pub use entry::{Entry, NameSelector, ENTRY_KEYS};
pub use input::{SpecError, Want, MAX_THREADS};
pub use policy::{AutoParams, Combine, ThreadPolicy, POLICY_KEYS};
pub use strict::MAX_INPUT;
