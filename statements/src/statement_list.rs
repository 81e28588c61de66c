//! [`statement_list!`]: a statement enum defined from one list, each entry's variant, stable
//! name and [`Access`](crate::Access) written once, next to each other.

/// Defines `pub enum $Enum` from a list of `Variant = "stable-name", Access;` entries (each
/// with its doc comment), with `COUNT`, `ALL` (in the order written), `name()` and
/// `access()` generated from that one list.
macro_rules! statement_list {
    (
        $(#[$meta:meta])*
        pub enum $Enum:ident {
            $( $(#[$doc:meta])* $Variant:ident = $name:literal, $access:ident; )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum $Enum {
            $( $(#[$doc])* $Variant, )*
        }

        impl $Enum {
            /// How many statements there are.
            pub const COUNT: usize = [$($name),*].len();

            /// Every statement, in the order they are declared (a statement's index in it is
            /// `statement as usize`).
            pub const ALL: [$Enum; $Enum::COUNT] = [$($Enum::$Variant),*];

            /// The statement's stable name, as adapters and logs are given it (kebab case:
            /// `"read-all"`, `"insert-if-absent"`, …).
            pub fn name(self) -> &'static str {
                match self {
                    $( $Enum::$Variant => $name, )*
                }
            }

            /// Whether the statement reads or may write the lock table.
            pub fn access(self) -> $crate::Access {
                match self {
                    $( $Enum::$Variant => $crate::Access::$access, )*
                }
            }
        }
    };
}

pub(crate) use statement_list;
